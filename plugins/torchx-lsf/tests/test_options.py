"""The run options: upstream's names, types and defaults; each bad value is one clear line."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from torchx_lsf.options import LsfOpts

from torchx.specs.errors import InvalidRunConfigException


def test_upstream_names_types_and_defaults() -> None:
    opts = dict(LsfOpts.as_runopts())
    assert list(opts) == ["lsf_queue", "jobdir", "container_workdir", "host_network", "shm_size"]
    assert opts["host_network"].opt_type is bool and opts["host_network"].default is False
    assert opts["shm_size"].opt_type is str and opts["shm_size"].default == "64m"
    assert all(o.opt_type is str for n, o in opts.items() if n not in ("host_network",))


def test_jobdir_defaults_to_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert LsfOpts.from_cfg(LsfOpts.as_runopts().resolve({})).job_directory() == str(tmp_path)
    assert LsfOpts.from_cfg({"jobdir": "rel/dir"}).job_directory() == str(tmp_path / "rel" / "dir")


@pytest.mark.parametrize(
    ("cfg", "said"),
    [
        ({"lsf_queue": "gpu queue"}, "'lsf_queue'='gpu queue' is not an LSF queue name"),
        ({"lsf_queue": "-q"}, "is not an LSF queue name"),
        ({"jobdir": "/jobs/%J"}, "LSF expands '%'"),
        ({"jobdir": "/jobs/it's"}, "quotes, backslashes"),
        ({"jobdir": "/jobs/a\nb"}, "control characters"),
        ({"container_workdir": "work"}, "'container_workdir'='work' is not an absolute path"),
        ({"shm_size": "lots"}, "'shm_size'='lots' is not a size"),
    ],
)
def test_bad_values_are_one_line(cfg: dict[str, str], said: str) -> None:
    with pytest.raises(InvalidRunConfigException) as info:
        LsfOpts.from_cfg(cfg)
    assert said in str(info.value) and "\n" not in str(info.value)


def test_good_values_pass() -> None:
    out = LsfOpts.from_cfg(
        {"lsf_queue": "gpu_q-1.x", "jobdir": "/jobs", "container_workdir": "/w", "shm_size": "1.5g"}
    )
    assert out.job_directory() == "/jobs" and out["shm_size"] == "1.5g"


# -- LsfOpts: declared once; the values are read as given, never stringified again ----------


def test_run_opts_are_lsf_opts() -> None:
    from torchx_lsf.scheduler import create_scheduler

    assert create_scheduler("t").run_opts() == LsfOpts.as_runopts()


def test_typed_values_are_read_as_they_were_given(tmp_path: Path) -> None:
    opts = LsfOpts.from_cfg(
        LsfOpts.as_runopts().resolve(
            {"host_network": True, "jobdir": str(tmp_path), "lsf_queue": "q"}
        )
    )
    assert opts.host_network is True and opts.jobdir == str(tmp_path) and opts.shm_size == "64m"
    assert LsfOpts.of(opts) is opts and opts.job_directory() == str(tmp_path)


@settings(max_examples=300, deadline=None)
@given(
    key=st.sampled_from(["lsf_queue", "jobdir", "container_workdir", "shm_size"]),
    value=st.text(st.characters(codec="utf-8"), max_size=24),
)
def test_every_check_accepts_its_own_result_or_refuses_in_one_line(key: str, value: str) -> None:
    try:
        once = LsfOpts.from_cfg({key: value})
    except InvalidRunConfigException as e:
        assert "\n" not in str(e) and repr(key) in str(e)
        return
    assert LsfOpts.from_cfg(dict(once)) == once

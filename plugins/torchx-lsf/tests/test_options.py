"""The run options: upstream's names, types and defaults; each bad value is one clear line."""

from __future__ import annotations

from pathlib import Path

import pytest
from torchx_lsf.options import checked, lsf_runopts

from torchx.specs.errors import InvalidRunConfigException


def test_upstream_names_types_and_defaults() -> None:
    opts = dict(lsf_runopts())
    assert list(opts) == ["lsf_queue", "jobdir", "container_workdir", "host_network", "shm_size"]
    assert opts["host_network"].opt_type is bool and opts["host_network"].default is False
    assert opts["shm_size"].opt_type is str and opts["shm_size"].default == "64m"
    assert all(o.opt_type is str for n, o in opts.items() if n not in ("host_network",))


def test_jobdir_defaults_to_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert checked(lsf_runopts().resolve({}))["jobdir"] == str(tmp_path)
    assert checked({"jobdir": "rel/dir"})["jobdir"] == str(tmp_path / "rel" / "dir")


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
        checked(cfg)
    assert said in str(info.value) and "\n" not in str(info.value)


def test_good_values_pass() -> None:
    out = checked(
        {"lsf_queue": "gpu_q-1.x", "jobdir": "/jobs", "container_workdir": "/w", "shm_size": "1.5g"}
    )
    assert out["jobdir"] == "/jobs" and out["shm_size"] == "1.5g"

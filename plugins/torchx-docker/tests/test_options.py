"""The run options: upstream's names, each value checked with one line."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from torchx_docker.options import DEFAULT_STOP_GRACE, DockerOpts, parse_size

from torchx.specs.errors import InvalidRunConfigException


def test_upstream_option_names_are_accepted() -> None:
    opts = DockerOpts.as_runopts()
    cfg = opts.resolve(
        opts.cfg_from_str(
            "copy_env=HF_*,WANDB_API_KEY;env=A:1,B:2;privileged=True;network=host;"
            "image_repo=127.0.0.1:5000/t"
        )
    )
    typed = DockerOpts.from_cfg(cfg)
    assert typed.copy_env == ["HF_*", "WANDB_API_KEY"]
    assert typed.env == {"A": "1", "B": "2"}
    assert typed.privileged is True
    assert typed.network == "host"
    assert typed.image_repo == "127.0.0.1:5000/t"
    assert typed.stop_grace == DEFAULT_STOP_GRACE
    assert typed.shm_bytes is None


def test_copy_env_matches_globs_against_the_host() -> None:
    typed = DockerOpts.from_cfg(DockerOpts.as_runopts().resolve({"copy_env": ["HF_*", "LANG"]}))
    host = {"HF_HOME": "/h", "HF_TOKEN": "t", "LANG": "C", "LANGUAGE": "en", "PATH": "/bin"}
    assert typed.copied_env(host) == {"HF_HOME": "/h", "HF_TOKEN": "t", "LANG": "C"}


@pytest.mark.parametrize(
    ("cfg", "message"),
    [
        ({"shm_size": "lots"}, "run option 'shm_size'='lots' is not a size"),
        ({"shm_size": "0"}, "run option 'shm_size'='0' is not a size"),
        ({"stop_grace": -1}, "run option 'stop_grace'=-1 is negative"),
        ({"network": " "}, "run option 'network' is empty"),
        ({"copy_env": ["A=1"]}, "run option 'copy_env' has 'A=1'"),
    ],
)
def test_bad_values_are_one_line(cfg: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidRunConfigException, match=message) as e:
        DockerOpts.from_cfg(DockerOpts.as_runopts().resolve(cfg))  # type: ignore[arg-type]
    assert "\n" not in str(e.value)


@given(st.integers(min_value=1, max_value=1 << 20), st.sampled_from(["", "b", "k", "m", "g", "G"]))
def test_parse_size_reads_every_unit(n: int, unit: str) -> None:
    factor = {"": 1, "b": 1, "k": 1024, "m": 1 << 20, "g": 1 << 30}[unit.lower()]
    assert parse_size("shm_size", f"{n}{unit}") == n * factor


@given(st.text(max_size=12))
def test_parse_size_never_crashes(text: str) -> None:
    try:
        assert parse_size("shm_size", text) > 0
    except InvalidRunConfigException as e:
        assert str(e).startswith("run option 'shm_size'=")

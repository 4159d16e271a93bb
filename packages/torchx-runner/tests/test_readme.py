"""The README's Python examples run as shown (docs as a test)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"

pytestmark = pytest.mark.skipif(
    not README.exists() or sys.platform != "linux",
    reason="needs the source tree's README and Linux (local scheduler)",
)


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README.read_text(), flags=re.S)


def _run(tmp_path: Path, code: str, *args: str) -> str:
    env = {**os.environ, "TORCHX_HOME": str(tmp_path / "home"), "HOME": str(tmp_path)}
    env.pop("TORCHXCONFIG", None)
    out = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def _wait_all(tmp_path: Path) -> None:
    """Lets every app the examples started end before the temp folder goes."""
    from torchx.schedulers.local.scheduler import create_scheduler

    sched = create_scheduler("readme", state_dir=str(tmp_path / "home"))
    for app in sched.list():
        desc = sched.describe(app.app_id)
        assert desc is not None
        for _ in sched.log_iter(app.app_id, desc.roles_statuses[0].role, should_tail=True):
            pass


def test_every_python_example_compiles() -> None:
    blocks = _blocks("python")
    assert len(blocks) >= 3
    for block in blocks:
        compile(block, str(README), "exec")


def test_launch_then_follow_from_another_process(tmp_path: Path) -> None:
    named = {b.split("\n", 1)[0][2:]: b for b in _blocks("python") if b.startswith("# ")}
    handle = _run(tmp_path, named["launch.py"]).strip()
    assert re.fullmatch(r"local://torchx/hello-[a-z0-9]{10}", handle), handle
    shown = next(b for b in _blocks("sh") if "python follow.py" in b)
    expected = shown.split("\n", 1)[1]  # what the README says follow.py prints
    try:
        assert _run(tmp_path, named["follow.py"], handle) == expected
    finally:
        _wait_all(tmp_path)


def test_component_example(tmp_path: Path) -> None:
    block = next(b for b in _blocks("python") if "run_component" in b)
    try:
        out = _run(tmp_path, block)
    finally:
        _wait_all(tmp_path)
    assert "torchrun" in out and "-m my_pkg.train" in out
    assert out.count("train/") == 2  # one line per replica of -j 2x4


def test_the_error_messages_the_readme_quotes_are_the_codes(tmp_path: Path) -> None:
    from torchx.runner import get_runner
    from torchx.runner.config import ConfigError, get_scheduler_cfg
    from torchx.specs import AppDef, InvalidRunConfigException, Role

    text = " ".join(README.read_text().split())
    quoted = re.search(r"\(`(unknown run option 'log_dri' [^`]*)`\)", text)
    assert quoted, "the README no longer quotes the unknown run option error"
    app = AppDef("a", [Role("r", image=str(tmp_path), entrypoint="echo")])
    with get_runner(use_config=False) as runner, pytest.raises(InvalidRunConfigException) as info:
        runner.dryrun(app, "local", cfg={"log_dri": "/tmp"})
    assert quoted.group(1) in str(info.value)

    shown = re.search(
        r"`/home/me/proj/\.torchxconfig: (\[local\] unknown key [^`]*); valid keys: \.\.\.`", text
    )
    assert shown, "the README no longer quotes the config key error"
    (tmp_path / ".torchxconfig").write_text("[local]\ngrace = 3\n")
    with get_runner(use_config=False) as runner:
        opts = runner.scheduler_run_opts("local")
    with pytest.raises(ConfigError) as error:
        get_scheduler_cfg("local", opts, cwd=tmp_path)
    assert str(error.value).startswith(
        f"{tmp_path / '.torchxconfig'}: {shown.group(1)}; valid keys: "
    )


def test_sweep_example_runs_four_trials(tmp_path: Path) -> None:
    """The torchx.sweeps example: the API starts, waits for and reports a real sweep."""
    block = next(b for b in _blocks("python") if "from torchx.sweeps import" in b)
    try:
        out = _run(tmp_path, block)
    finally:
        _wait_all(tmp_path)
    assert out.startswith("SUCCEEDED ") and out.count("'SUCCEEDED'") == 4, out
    assert "{'num_replicas': '2', 'cpu': '1'}" in out

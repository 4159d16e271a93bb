"""``torchx run --dryrun`` makes the request once, with or without ``--show-secrets``.

In-process (the subprocess tests in test_run.py cannot count calls): the run command is
given a Runner over a local scheduler that counts the requests it makes, and
``runopts.resolve`` is counted too.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from torchx.cli import _runtime
from torchx.cli.cmd_run import RunCommand
from torchx.runner import Runner
from torchx.schedulers.local.scheduler import LocalScheduler
from torchx.specs import AppDef, AppDryRunInfo, CfgVal
from torchx.specs.options import runopts


class Counting(LocalScheduler):
    def __init__(self, session_name: str, state_dir: str) -> None:
        super().__init__(session_name, state_dir=state_dir)
        self.dryruns = 0

    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[Any]:
        self.dryruns += 1
        return super()._submit_dryrun(app, cfg)


@pytest.mark.parametrize("show", [False, True])
def test_dryrun_makes_the_request_once(
    show: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # no .torchxconfig around
    monkeypatch.setenv("HOME", str(tmp_path))
    sched = Counting("torchx", str(tmp_path / "state"))
    runner = Runner("torchx", {"local": lambda session_name, **kw: sched})
    monkeypatch.setattr(_runtime, "get_runner", lambda one_shot=False: runner)
    resolves: list[Mapping[str, CfgVal]] = []
    real = runopts.resolve

    def counted(self: runopts, cfg: Mapping[str, CfgVal], **kwargs: Any) -> Any:
        resolves.append(dict(cfg))
        return real(self, cfg, **kwargs)

    monkeypatch.setattr(runopts, "resolve", counted)
    parser = argparse.ArgumentParser()
    command = RunCommand()
    command.add_arguments(parser)
    argv = ["--dryrun", "-cfg", "prepend_cwd=true", "utils.sh", "--env", "API_TOKEN=t0k3n99"]
    args = parser.parse_args(argv[:1] + (["--show-secrets"] if show else []) + argv[1:] + ["true"])

    assert command.run(args) == 0

    assert sched.dryruns == 1
    assert len(resolves) == 1 and resolves[0]["prepend_cwd"] is True
    out = capsys.readouterr().out
    assert "=== SCHEDULER REQUEST (local) ===" in out
    assert ("t0k3n99" in out) is show and ("API_TOKEN=****" in out) is not show
    assert sched.list() == []  # a dry run submits nothing

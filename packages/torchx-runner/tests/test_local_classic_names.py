"""Upstream's local-scheduler names (``torchx.schedulers.local_scheduler``): ReplicaParam and
ImageProvider.get_replica_param, LocalOpts, PopenRequest, LogIterator, SignalException."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from torchx.schedulers.local_scheduler import (
    ImageProvider,
    LocalOpts,
    LocalScheduler,
    LogIterator,
    PopenRequest,
    ReplicaParam,
    SignalException,
)
from torchx.specs import AppDef, AppState, Role


class _Wrapped(ImageProvider):
    """Runs every role under ``nice``: what an upstream provider overriding the hook does."""

    def __init__(self, cfg: object = None) -> None:
        del cfg

    def fetch(self, image: str) -> str:
        return image

    def get_replica_param(
        self,
        img_root: str,
        role: Role,
        stdout: str | None = None,
        stderr: str | None = None,
        combined: str | None = None,
    ) -> ReplicaParam:
        param = super().get_replica_param(img_root, role, stdout, stderr, combined)
        return ReplicaParam(["nice", *param.args], {**param.env, "WRAPPED": "1"}, cwd="/")


def test_the_dry_run_asks_get_replica_param_for_what_each_role_runs(tmp_path: Path) -> None:
    sched = LocalScheduler("t", image_provider_class=_Wrapped, state_dir=str(tmp_path))
    role = Role("r", str(tmp_path), entrypoint="echo", args=["${replica_id}"], num_replicas=2)
    info = sched.submit_dryrun(AppDef("a", [role]), {})
    reps = info.request.roles[0].replicas
    assert [(r.entrypoint, r.args, r.cwd, r.env["WRAPPED"]) for r in reps] == [
        ("nice", ["echo", "0"], "/", "1"),
        ("nice", ["echo", "1"], "/", "1"),
    ]


def test_get_replica_param_by_default_is_the_entrypoint_args_env_and_cwd() -> None:
    class Plain(ImageProvider):
        def fetch(self, image: str) -> str:
            return "/img"

        def get_cwd(self, image: str) -> str | None:
            return "/work"

    role = Role("r", "img", entrypoint="python", args=["-m", "m"], env={"A": "1"})
    param = Plain().get_replica_param("/img", role, stdout="/o")
    assert param == ReplicaParam(["python", "-m", "m"], {"A": "1"}, "/o", None, None, "/work")


def test_local_opts_is_the_schedulers_run_options() -> None:
    assert LocalScheduler("t").opts_class is LocalOpts


def test_popen_request_shows_each_replica_as_it_will_run(tmp_path: Path) -> None:
    sched = LocalScheduler("t", state_dir=str(tmp_path))
    app = AppDef("a", [Role("r", "", entrypoint="echo", args=["${replica_id}"], num_replicas=2)])
    req = sched.submit_dryrun(app, {}).request
    popen = PopenRequest.of(req)
    assert (popen.app_id, popen.log_dir) == (req.app_id, req.log_dir)
    dirs = [rep.log_dir for rep in req.roles[0].replicas]
    assert popen.role_log_dirs == {"r": dirs}
    assert [(p.args, p.stdout, p.stderr) for p in popen.role_params["r"]] == [
        (["echo", str(k)], f"{d}/stdout.log", f"{d}/stderr.log") for k, d in enumerate(dirs)
    ]


class _Sched:
    """A scheduler's ``describe`` that says RUNNING until told the app has ended."""

    def __init__(self) -> None:
        self.state = AppState.RUNNING
        self.asked = 0

    def describe(self, app_id: str) -> Any:
        self.asked += 1
        return type("D", (), {"state": self.state})()


def test_log_iterator_reads_a_file_and_follows_it_until_the_app_ends(tmp_path: Path) -> None:
    log = tmp_path / "stdout.log"
    log.write_text("a\nb\n")
    sched = _Sched()
    assert list(LogIterator("app", str(log), sched, should_tail=False)) == ["a\n", "b\n"]  # type: ignore[arg-type]
    assert sched.asked == 0

    lines = iter(LogIterator("app", str(log), sched, interval=0.0))  # type: ignore[arg-type]
    assert [next(lines), next(lines)] == ["a\n", "b\n"]
    sched.state = AppState.SUCCEEDED
    assert list(lines) == []
    assert sched.asked >= 1


def test_signal_exception_carries_the_signal() -> None:
    e = SignalException("process received SIGTERM", signal.SIGTERM)
    assert (str(e), e.sigval) == ("process received SIGTERM", signal.SIGTERM)


def test_termination_raises_turns_sigterm_into_signal_exception() -> None:
    from torchx.schedulers.local.classic import termination_raises

    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(SignalException) as info, termination_raises():
        os.kill(os.getpid(), signal.SIGTERM)
        signal.sigtimedwait([], 0)  # the handler runs at the next bytecode boundary
    assert info.value.sigval == signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is before


def test_the_new_names_are_imported_on_first_use_only() -> None:
    code = (
        "import sys, torchx.schedulers.local_scheduler as m; "
        "assert 'torchx.schedulers.local.classic' not in sys.modules; m.LogIterator; "
        "assert 'torchx.schedulers.local.classic' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)

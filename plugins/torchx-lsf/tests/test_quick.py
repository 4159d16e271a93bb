"""The quick handler (torchx_lsf.quick) answers what the scheduler answers, or declines.

For the same LSF answers (scripted tools on PATH) and the same app directory, the
handler's status must equal the scheduler's ``describe`` through
``torchx.schedulers.helpers.quick.quick_status_of``, and its log lines the scheduler's
``log_iter``'s; everything else must decline (None). The ``torchx`` command's two paths
are compared on the stand-in in tests/integration/test_apps.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from torchx_lsf import commands, plugin, quick
from torchx_lsf.parse import SEP
from torchx_lsf.scheduler import LsfScheduler, create_scheduler

from torchx.schedulers.contract.api import Stream
from torchx.schedulers.helpers.quick import CALLS, handler_problem, quick_status_of
from torchx.schedulers.testing.fake_tools import FakeTools
from torchx.specs import AppDef, Resource, Role

HANDLER = quick.HANDLER


@pytest.fixture
def sched() -> LsfScheduler:
    return create_scheduler("torchx")


def _submit(sched: LsfScheduler, fake: FakeTools, tmp_path: Path, n: int = 2) -> tuple[str, str]:
    role = Role(
        "main",
        image="/tmp",
        entrypoint="echo",
        args=["hi"],
        num_replicas=n,
        env={"LEVEL": "3"},
        resource=Resource(cpu=1, gpu=0, memMB=64),
    )
    replies = [
        {"stdout": f"Job <{100 + i}> is submitted to default queue <normal>.\n"} for i in range(n)
    ]
    fake.answer("bsub", **replies[0], then=replies[1:])  # type: ignore[arg-type]
    info = sched.submit_dryrun(AppDef("demo", [role]), {"jobdir": str(tmp_path / "jobs")})
    app_id = sched.schedule(info)
    return app_id, str(tmp_path / "jobs" / ".torchx-lsf" / app_id)


def _line(job_id: int, state: str, app_id: str, k: int, app_dir: str, code: str = "-") -> str:
    start = "-" if state == "PEND" else "Nov 25 06:40"
    end = "Nov 25 06:41" if state in ("DONE", "EXIT") else "-"
    host = "-" if state == "PEND" else "hostA"
    fields = [str(job_id), state, app_id, code, host, f"{app_id}-main-{k}", start, end, app_dir]
    return SEP.join(fields)


def _answer(fake: FakeTools, text: str) -> None:
    fake.answer("bjobs", stdout=text, then=[{"stdout": text}] * 5)


@pytest.mark.parametrize(
    "states", [("RUN", "RUN"), ("DONE", "DONE"), ("PEND", "PEND"), ("PSUSP", "SSUSP")]
)
def test_its_status_is_the_schedulers(
    sched: LsfScheduler, fake_lsf: FakeTools, tmp_path: Path, states: tuple[str, str]
) -> None:
    app_id, app_dir = _submit(sched, fake_lsf, tmp_path)
    _answer(
        fake_lsf, "\n".join(_line(100 + k, s, app_id, k, app_dir) for k, s in enumerate(states))
    )
    desc = sched.describe(app_id)
    assert desc is not None
    got = HANDLER.status(app_id)
    assert got is not None and got == quick_status_of(desc)
    assert got["envs"] == [{"LEVEL": "3"}]
    # the very bjobs the scheduler runs
    calls = fake_lsf.calls("bjobs")
    assert calls[-1] == calls[-2]


@pytest.mark.parametrize(
    "case", ["different states", "failed", "cancelled", "unknown", "recorded exit", "deleted"]
)
def test_anything_but_the_plain_case_declines(
    sched: LsfScheduler, fake_lsf: FakeTools, tmp_path: Path, case: str
) -> None:
    app_id, app_dir = _submit(sched, fake_lsf, tmp_path)
    states = {
        "different states": ("RUN", "PEND"),
        "failed": ("EXIT", "EXIT"),
        "unknown": ("ZOMBI", "ZOMBI"),
    }.get(case, ("RUN", "RUN"))
    if case == "cancelled":
        Path(app_dir, "cancelled").touch()
    if case == "recorded exit":  # a failed replica still ending the others
        Path(app_dir, "main-1.exit").write_text("7\n")
    if case == "deleted":
        import shutil

        shutil.rmtree(app_dir)  # what delete removes
    _answer(
        fake_lsf,
        "\n".join(_line(100 + k, s, app_id, k, app_dir, "3") for k, s in enumerate(states)),
    )
    assert HANDLER.status(app_id) is None


def test_lsf_failing_or_missing_declines(
    fake_lsf: FakeTools, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake_lsf.answer("bjobs", stderr="LSF is down. Please wait ...\n", returncode=255)
    assert HANDLER.status("demo-x1") is None
    fake_lsf.answer("bjobs", stdout="")  # no job: the full path says there is no app
    assert HANDLER.status("demo-x1") is None
    assert HANDLER.status("../etc") is None
    monkeypatch.setenv("TORCHX_LSF_TIMEOUT", "nope")  # the full command says what is wrong
    assert HANDLER.status("demo-x1") is None
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("TORCHX_LSF_TIMEOUT")
    assert HANDLER.status("demo-x1") is None


def test_its_log_is_the_schedulers(
    sched: LsfScheduler, fake_lsf: FakeTools, tmp_path: Path
) -> None:
    app_id, app_dir = _submit(sched, fake_lsf, tmp_path)
    Path(app_dir, "main-1.out").write_text("a\nb\n")
    Path(app_dir, "main-1.err").write_text("e\n")
    _answer(fake_lsf, "\n".join(_line(100 + k, "DONE", app_id, k, app_dir) for k in range(2)))
    status = HANDLER.status(app_id)
    assert status is not None
    for streams in ("stdout", "stderr", None):
        got = HANDLER.log(app_id, "main", 1, streams, status)
        assert got is not None
        want = sched.log_iter(app_id, "main", 1, streams=Stream(streams) if streams else None)
        assert sorted(got) == sorted(want)
    assert HANDLER.log(app_id, "main", 0, "stdout", status) is None  # missing: the scheduler says
    assert HANDLER.log(app_id, "main", 2, "stdout", status) is None
    assert HANDLER.log(app_id, "other", 0, "stdout", status) is None


def test_its_constants_are_the_schedulers() -> None:
    assert (quick.TIMEOUT_ENV, quick.DEFAULT_TIMEOUT, quick.MAX_TIMEOUT) == (
        commands.TIMEOUT_ENV,
        commands.DEFAULT_TIMEOUT,
        commands.MAX_TIMEOUT,
    )


def test_the_plugin_registers_it() -> None:
    from torchx.specs.plugins import get_registry, load_ref

    ref = plugin.torchx_quick_handlers()["lsf"]
    assert load_ref(ref) is HANDLER
    registry = get_registry()
    entry = registry.quick_handlers["lsf"]
    assert entry.ref == ref
    assert entry.distribution == registry.schedulers["lsf"].distribution == "torchx-lsf"
    assert handler_problem(HANDLER) == "" and set(HANDLER.calls) == set(CALLS)


def test_it_imports_nothing_heavy(sched: LsfScheduler, fake_lsf: FakeTools, tmp_path: Path) -> None:
    """What it exists to skip: attrs, the spec types, the Scheduler contract, pluggy."""
    app_id, app_dir = _submit(sched, fake_lsf, tmp_path, 1)
    Path(app_dir, "main-0.out").write_text("hi\n")
    Path(app_dir, "main-0.err").write_text("")
    fake_lsf.answer("bjobs", stdout=_line(100, "DONE", app_id, 0, app_dir))
    code = (
        f"import sys; from torchx_lsf.quick import HANDLER; s = HANDLER.status({app_id!r}); "
        f"print(list(HANDLER.log({app_id!r}, 'main', 0, None, s))); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('attr', 'attrs', 'cattrs', "
        "'pluggy', 'shutil') or m.startswith(('torchx.specs', 'torchx.runner')) "
        "or m in ('torchx.schedulers.contract.api', 'torchx_lsf.scheduler', 'torchx_lsf.status', "
        "'torchx_lsf.jobdir', 'typing')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=os.environ
    ).stdout.splitlines()
    assert out == ["['hi\\n']", "[]"]

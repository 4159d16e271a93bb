"""The quick handler (torchx_slurm.quick) answers what the scheduler answers, or declines.

For the same Slurm answers (scripted tools on PATH) and the same job directory, the
handler's status must equal the scheduler's ``describe`` through
``torchx.schedulers.helpers.quick.quick_status_of``, and its log lines the scheduler's
``log_iter``'s; everything else must decline (None). The ``torchx`` command's two paths
are compared end to end in torchx-cli's tests and on a real cluster in
tests/integration/test_cli.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from torchx_slurm import commands, plugin, quick
from torchx_slurm.parse import SEP
from torchx_slurm.scheduler import SlurmScheduler, create_scheduler

from torchx.schedulers.contract.api import Stream
from torchx.schedulers.helpers import appstore
from torchx.schedulers.helpers import quick as helpers_quick
from torchx.schedulers.helpers.quick import CALLS, handler_problem, quick_status_of
from torchx.schedulers.testing.fake_tools import FakeTools
from torchx.specs import AppDef, Role

HANDLER = quick.HANDLER


@pytest.fixture
def sched() -> SlurmScheduler:
    return create_scheduler("torchx")


def _line(job: str, state: str, name: str, work_dir: str, *, nodes: str = "n1",
          reason: str = "None", times: tuple[str, str] | None = None) -> str:  # fmt: skip
    fields = [job, state, "alice", nodes, reason, name]
    if times is not None:
        fields += list(times)
    return SEP.join([*fields, work_dir]) + "\n"


def _same(sched: SlurmScheduler, app_id: str) -> None:
    desc = sched.describe(app_id)
    assert desc is not None
    assert HANDLER.status(app_id) == quick_status_of(desc)


def _job(tmp_path: Path, app_id: str = "7") -> Path:
    state = tmp_path / ".torchx-slurm" / app_id
    state.mkdir(parents=True)
    return state


@pytest.mark.parametrize("slurm_state", ["RUNNING", "COMPLETED", "CANCELLED", "COMPLETING",
                                         "SUSPENDED", "PENDING", "REQUEUED"])  # fmt: skip
@pytest.mark.parametrize("exits", [{}, {0: "0\n", 1: "0\n"}, {1: "3\n"}, {0: "143\n"}])
def test_the_status_is_describes(
    fake_slurm: FakeTools, sched: SlurmScheduler, tmp_path: Path, slurm_state: str,
    exits: dict[int, str],
) -> None:  # fmt: skip
    state = _job(tmp_path)
    for k, text in exits.items():
        (state / f"w.{k}.exit").write_text(text)
    times = ("2026-11-25T03:00:00", "2026-11-25T03:05:00")
    fake_slurm.answer(
        "squeue",
        stdout=_line("7+0", slurm_state, "a-1:w:0", str(tmp_path), reason="Resources", times=times)
        + _line("7+1", slurm_state, "a-1:w:1", str(tmp_path), nodes="n2", times=times),
    )
    _same(sched, "7")


def test_restarts_hosts_and_a_plain_job(
    fake_slurm: FakeTools, sched: SlurmScheduler, tmp_path: Path
) -> None:
    (_job(tmp_path) / "restarts").write_text("2\n")
    fake_slurm.answer("squeue", stdout=_line("7", "RUNNING", "my-own-job", str(tmp_path)))
    _same(sched, "7")
    assert HANDLER.status("7") == {**quick_status_of(sched.describe("7")), "num_restarts": 2}


def test_a_job_without_a_work_dir(fake_slurm: FakeTools, sched: SlurmScheduler) -> None:
    fake_slurm.answer("squeue", stdout=_line("7+0", "RUNNING", "a-1:w:0", ""))
    _same(sched, "7")


def test_the_kept_appdefs_env_is_what_status_masks(
    fake_slurm: FakeTools, sched: SlurmScheduler, tmp_path: Path
) -> None:
    state = _job(tmp_path)
    app = AppDef(
        "a",
        [
            Role("w", image="/tmp", entrypoint="echo", env={"API_TOKEN": "s3cret", "N": "1"}),
            Role("ps", image="/tmp", entrypoint="echo"),
        ],
    )
    appstore.save(str(state), app)
    fake_slurm.answer("squeue", stdout=_line("7+0", "RUNNING", "a-1:w:0", str(tmp_path)))
    _same(sched, "7")
    status = HANDLER.status("7")
    assert status is not None and status["envs"] == [{"API_TOKEN": "s3cret", "N": "1"}, {}]
    # a kept AppDef the scheduler does not trust (others may read it) is none to both
    (state / appstore.FILE).chmod(0o644)
    _same(sched, "7")
    assert HANDLER.status("7")["envs"] == []  # type: ignore[index]


@pytest.mark.parametrize(
    "lines",
    [
        # components the scheduler rolls up, states it maps with care
        [("7+0", "RUNNING"), ("7+1", "COMPLETED")],
        [("7+0", "FAILED"), ("7+1", "FAILED")],
        [("7+0", "BRAND_NEW_STATE")],
        # not this job: a component of another one, or nothing
        [("6+1", "RUNNING")],
        [],
    ],
)
def test_what_it_does_not_read_with_certainty_declines(
    fake_slurm: FakeTools, tmp_path: Path, lines: list[tuple[str, str]]
) -> None:
    fake_slurm.answer(
        "squeue", stdout="".join(_line(j, s, f"a-1:w:{j[-1]}", str(tmp_path)) for j, s in lines)
    )
    assert HANDLER.status("7") is None


def test_exit_codes_of_replicas_squeue_does_not_show_decline(
    fake_slurm: FakeTools, tmp_path: Path
) -> None:
    (_job(tmp_path) / "w.5.exit").write_text("0\n")
    fake_slurm.answer("squeue", stdout=_line("7+0", "COMPLETED", "a-1:w:0", str(tmp_path)))
    assert HANDLER.status("7") is None


def test_a_kept_appdef_it_cannot_read_declines(fake_slurm: FakeTools, tmp_path: Path) -> None:
    state = _job(tmp_path)
    path = state / appstore.FILE
    path.write_bytes(b"not json")
    path.chmod(0o600)
    fake_slurm.answer("squeue", stdout=_line("7+0", "RUNNING", "a-1:w:0", str(tmp_path)))
    assert HANDLER.status("7") is None


@pytest.mark.parametrize(
    ("answer", "env"),
    [
        ({"returncode": 1, "stderr": "slurm_load_jobs error: Invalid job id specified\n"}, {}),
        ({"returncode": 1, "stderr": "Unable to contact slurm controller\n"}, {}),
        ({"sleep": 3}, {"TORCHX_SLURM_TIMEOUT": "0.5"}),
        ({}, {"TORCHX_SLURM_TIMEOUT": "inf"}),
        ({}, {"TORCHX_SLURM_TIMEOUT": "soon"}),
        ({}, {"SLURM_CONF": "/nonexistent/slurm.conf"}),
        ({}, {"PATH": "/nonexistent"}),
    ],
)
def test_every_failure_declines(
    fake_slurm: FakeTools,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    answer: dict[str, object],
    env: dict[str, str],
) -> None:
    fake_slurm.answer(
        "squeue",
        stdout=_line("7+0", "RUNNING", "a-1:w:0", str(tmp_path)),
        **answer,  # type: ignore[arg-type]
    )
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert HANDLER.status("7") is None


@pytest.mark.parametrize("app_id", ["abc", "7+1", "٣", "7_1", ""])
def test_ids_that_are_no_job_decline_without_asking_slurm(
    fake_slurm: FakeTools, app_id: str
) -> None:
    assert HANDLER.status(app_id) is None
    assert fake_slurm.calls("squeue") == []


@pytest.mark.parametrize("old_layout", [False, True])
@pytest.mark.parametrize("streams", [None, "stdout", "stderr", "combined"])
def test_log_lines_are_log_iters(
    fake_slurm: FakeTools, sched: SlurmScheduler, tmp_path: Path, streams: str | None,
    old_layout: bool,
) -> None:  # fmt: skip
    state = _job(tmp_path)
    where = tmp_path if old_layout else state
    (where / "slurm-7-w-1.out").write_text("out 1\nout 2\nno newline")
    (where / "slurm-7-w-1.err").write_text("err 1\n")
    fake_slurm.answer(
        "squeue",
        stdout=_line("7+0", "COMPLETED", "a-1:w:0", str(tmp_path))
        + _line("7+1", "COMPLETED", "a-1:w:1", str(tmp_path)),
    )
    status = HANDLER.status("7")
    assert status is not None
    lines = HANDLER.log("7", "w", 1, streams, status)
    assert lines is not None
    full = sched.log_iter("7", "w", 1, streams=Stream(streams) if streams else None)
    assert list(lines) == list(full)
    assert "".join(lines.blocks(1 << 16)) == "".join(full.blocks(1 << 16))  # type: ignore[attr-defined]


def test_a_missing_log_file_or_replica_declines(fake_slurm: FakeTools, tmp_path: Path) -> None:
    state = _job(tmp_path)
    (state / "slurm-7-w-0.out").write_text("out\n")
    fake_slurm.answer("squeue", stdout=_line("7+0", "COMPLETED", "a-1:w:0", str(tmp_path)))
    status = HANDLER.status("7")
    assert status is not None
    assert HANDLER.log("7", "w", 0, "stdout", status) is not None
    assert HANDLER.log("7", "w", 0, None, status) is None  # no .err: the scheduler says so
    assert HANDLER.log("7", "w", 1, "stdout", status) is None
    assert HANDLER.log("7", "x", 0, "stdout", status) is None


def test_its_constants_are_the_schedulers() -> None:
    assert (quick.TIMEOUT_ENV, quick.DEFAULT_TIMEOUT, quick.MAX_TIMEOUT) == (
        commands.TIMEOUT_ENV,
        commands.DEFAULT_TIMEOUT,
        commands.MAX_TIMEOUT,
    )
    from torchx.specs import appdef_json

    assert (quick.APPDEF_FILE, quick.APPDEF_VERSION) == (appstore.FILE, appdef_json.API_VERSION)


def test_the_plugin_registers_it() -> None:
    from torchx.specs.plugins import get_registry, load_ref

    ref = plugin.torchx_quick_handlers()["slurm"]
    assert load_ref(ref) is HANDLER
    registry = get_registry()
    entry = registry.quick_handlers["slurm"]
    assert entry.ref == ref
    assert entry.distribution == registry.schedulers["slurm"].distribution == "torchx-slurm"
    # it keeps the contract: it declares what it answers without the Runner
    assert handler_problem(HANDLER) == "" and set(HANDLER.calls) == set(CALLS)


def test_it_imports_nothing_heavy(fake_slurm: FakeTools, tmp_path: Path) -> None:
    """What it exists to skip: attrs, the spec types, the Scheduler contract, pluggy."""
    (_job(tmp_path) / "slurm-7-w-0.out").write_text("hi\n")
    (tmp_path / ".torchx-slurm" / "7" / "slurm-7-w-0.err").write_text("")
    fake_slurm.answer("squeue", stdout=_line("7+0", "COMPLETED", "a-1:w:0", str(tmp_path)))
    code = (
        "import sys; from torchx_slurm.quick import HANDLER; s = HANDLER.status('7'); "
        "print(list(HANDLER.log('7', 'w', 0, None, s))); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('attr', 'attrs', 'cattrs', "
        "'pluggy') or m.startswith(('torchx.specs', 'torchx.runner')) "
        "or m in ('torchx.schedulers.contract.api', 'torchx_slurm.scheduler', 'torchx_slurm.status', "
        "'typing')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=os.environ
    ).stdout.splitlines()
    assert out == ["['hi\\n']", "[]"]


@pytest.mark.parametrize(
    "path",
    [None, "", "{bin}", "/nonexistent:{bin}", "{bin}:{bin}", "{dir}:{bin}", ":{bin}", "/usr/bin"],
)
def test_which_is_shutils(
    fake_slurm: FakeTools, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str | None
) -> None:
    import shutil

    (tmp_path / "squeue").mkdir()  # a directory of the name is no command
    if path is None:
        monkeypatch.delenv("PATH")
    else:
        monkeypatch.setenv("PATH", path.format(bin=fake_slurm.bin, dir=tmp_path))
    monkeypatch.chdir(fake_slurm.bin)
    for tool in ("squeue", "sh", "no-such-tool"):
        assert helpers_quick.which(tool) == shutil.which(tool)

"""The local scheduler's logs: nothing lost, stored once, long lines whole, disk full.

Real apps, real files. Each test's reproduction is the one of issue 13; they failed
before the logs were indexed instead of copied (lost lines after a burst, a combined
copy 6x the raw output, 64 KiB line splits, 4x the output's size in memory, a record
RUNNING forever on a full disk).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from torchx.schedulers.contract.api import Stream
from torchx.schedulers.local import logs as logs_mod
from torchx.schedulers.local.scheduler import LocalScheduler
from torchx.specs import AppDef, AppState, Role

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the local scheduler is Linux-only")


def py_role(code: str, name: str = "w") -> Role:
    return Role(name, image="/", entrypoint=sys.executable, args=["-c", textwrap.dedent(code)])


def run(sched: LocalScheduler, role: Role) -> str:
    return sched.submit(AppDef("app", [role]), {})


def wait(sched: LocalScheduler, app_id: str) -> Any:
    for _ in sched.log_iter(app_id, "w", should_tail=True, streams=Stream.STDERR):
        pass
    desc = sched.describe(app_id)
    assert desc is not None and desc.state.is_terminal(), desc
    return desc


def log_dir(sched: LocalScheduler, app_id: str) -> Path:
    return Path(sched.state_dir) / "apps" / app_id / "logs" / "w" / "0"


# ----------------------------------------------------------------------------- nothing lost

N_BURST = 1_000_001
PAD = "x" * 80

# ~96 MB in about a second, then exit: the burst that lost half its lines
_BURST = f"""
import sys
out = sys.stdout.buffer
chunk = []
for i in range({N_BURST}):
    chunk.append(b"line %09d {PAD}\\n" % i)
    if len(chunk) == 10000:
        out.write(b"".join(chunk))
        chunk = []
out.write(b"".join(chunk))
out.flush()
sys.stderr.write("the end\\n")
"""


def check_burst(lines: Iterable[str], with_stderr: bool) -> None:
    """Every line of the burst, in order, the last included (and stderr's when asked)."""
    i = 0
    end = 0
    for line in lines:
        if line == "the end\n":
            end += 1
            continue
        assert line == f"line {i:09d} {PAD}\n", (i, line[:120])
        i += 1
    assert i == N_BURST, f"{i} of {N_BURST} lines"
    assert end == (1 if with_stderr else 0)


def test_a_burst_then_exit_reaches_every_view(sched: LocalScheduler) -> None:
    app_id = run(sched, py_role(_BURST))
    check_burst(sched.log_iter(app_id, "w", should_tail=True), with_stderr=True)
    assert sched.describe(app_id).state == AppState.SUCCEEDED  # type: ignore[union-attr]
    check_burst(sched.log_iter(app_id, "w"), with_stderr=True)
    check_burst(sched.log_iter(app_id, "w", streams=Stream.STDOUT), with_stderr=False)
    assert list(sched.log_iter(app_id, "w", streams=Stream.STDERR)) == ["the end\n"]
    hour = timedelta(hours=1)
    since = datetime.now() - hour
    check_burst(sched.log_iter(app_id, "w", since=since), with_stderr=True)
    check_burst(sched.log_iter(app_id, "w", since=since, streams=Stream.STDOUT), with_stderr=False)
    assert list(sched.log_iter(app_id, "w", until=since)) == []
    # the blocks printers use hold the same text
    blocks = sched.log_iter(app_id, "w", streams=Stream.STDERR).blocks()  # type: ignore[attr-defined]
    assert "".join(blocks) == "the end\n"


def test_output_of_a_killed_supervisor_is_still_delivered(sched: LocalScheduler) -> None:
    """Bytes written after the last index record (the supervisor never saw them) come last."""
    app_id = run(sched, py_role("print('first', flush=True)"))
    wait(sched, app_id)
    with open(log_dir(sched, app_id) / "stdout.log", "a") as f:
        f.write("written after the end\nand no newline")
    assert list(sched.log_iter(app_id, "w")) == [
        "first\n",
        "written after the end\n",
        "and no newline\n",
    ]


# ----------------------------------------------------------------------------- stored once


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def test_logs_are_stored_once(sched: LocalScheduler) -> None:
    app_id = sched.submit(
        AppDef("seq", [Role("w", image="/", entrypoint="seq", args=["1000000"])]), {}
    )
    wait(sched, app_id)
    raw = sum(len(f"{i}\n") for i in range(1, 1_000_001))
    logs = log_dir(sched, app_id)
    assert (logs / "stdout.log").stat().st_size == raw
    assert sorted(p.name for p in logs.iterdir()) == ["index", "stderr.log", "stdout.log"]
    assert dir_bytes(logs) <= 1.1 * raw, dir_bytes(logs)
    lines = sched.log_iter(app_id, "w")
    assert sum(1 for _ in lines) == 1_000_000


_PING_PONG = """
import os, sys, time
index = sys.argv[1]
def size():
    try:
        return os.stat(index).st_size
    except FileNotFoundError:  # written from the first output on
        return 0
def printed(stream, text):
    before = size()
    stream.write(text)
    stream.flush()
    while size() == before:  # until the supervisor has indexed it
        time.sleep(0.005)
for i in range(6):
    printed(sys.stdout, f"out {i}: some typical line of a training log, loss=0.{i}\\n")
    printed(sys.stderr, f"err {i}: a warning that comes between them\\n")
"""


def test_combined_view_keeps_the_order_of_the_streams_and_stays_small(
    sched: LocalScheduler,
) -> None:
    """Each line is indexed before the next is printed: the combined order is exact."""
    role = py_role(_PING_PONG)
    role.args.append(str(Path(sched.state_dir) / "apps" / "${app_id}" / "logs/w/0/index"))
    app_id = run(sched, role)
    assert wait(sched, app_id).state == AppState.SUCCEEDED
    combined = [line.split(":")[0] for line in sched.log_iter(app_id, "w")]
    assert combined == [f"{s} {i}" for i in range(6) for s in ("out", "err")]
    logs = log_dir(sched, app_id)
    raw = (logs / "stdout.log").stat().st_size + (logs / "stderr.log").stat().st_size
    header = len((logs / "index").read_bytes().split(b"\n")[0]) + 1  # ~40 bytes, once
    assert dir_bytes(logs) - header <= 1.1 * raw, (dir_bytes(logs), raw)


# ----------------------------------------------------------------------------- long lines


def test_long_lines_stay_whole_in_every_view(sched: LocalScheduler) -> None:
    app_id = run(
        sched,
        py_role(
            """
            import sys
            sys.stdout.write("a" * 100_000 + "\\nshort\\n")
            sys.stdout.flush()
            sys.stderr.write("é" * 70_000 + "\\n")
            """
        ),
    )
    wait(sched, app_id)
    long_out, long_err = "a" * 100_000 + "\n", "é" * 70_000 + "\n"
    assert list(sched.log_iter(app_id, "w", streams=Stream.STDOUT)) == [long_out, "short\n"]
    assert list(sched.log_iter(app_id, "w", streams=Stream.STDERR)) == [long_err]
    assert sorted(sched.log_iter(app_id, "w")) == sorted([long_out, "short\n", long_err])
    since = datetime.now() - timedelta(hours=1)
    assert sorted(sched.log_iter(app_id, "w", since=since)) == sorted(
        [long_out, "short\n", long_err]
    )


_HALF_THEN_REST = """
import os, sys, time
index = sys.argv[1]
def size():
    try:
        return os.stat(index).st_size
    except FileNotFoundError:
        return 0
sys.stdout.write("b" * 100_000)  # half a line: seen (and indexed) before it ends
sys.stdout.flush()
while size() == 0:
    time.sleep(0.005)
sys.stdout.write("b" * 100_000 + "\\n")
"""


def test_a_long_line_seen_half_written_stays_whole(sched: LocalScheduler) -> None:
    """The supervisor notes the first half of a 200 KB line before its end is written."""
    role = py_role(_HALF_THEN_REST)
    role.args.append(str(Path(sched.state_dir) / "apps" / "${app_id}" / "logs/w/0/index"))
    app_id = run(sched, role)
    assert wait(sched, app_id).state == AppState.SUCCEEDED
    whole = ["b" * 200_000 + "\n"]
    assert list(sched.log_iter(app_id, "w")) == whole
    assert list(sched.log_iter(app_id, "w", streams=Stream.STDOUT)) == whole
    since = datetime.now() - timedelta(hours=1)
    assert list(sched.log_iter(app_id, "w", since=since)) == whole


_READ_HUGE = """
import json, sys
from torchx.schedulers.local.scheduler import create_scheduler
s = create_scheduler("t", state_dir=sys.argv[1])
out = {}
for view in ("stdout", None):
    total = longest = 0
    last = ""
    for piece in s.log_iter(sys.argv[2], "w", streams=view):
        total += len(piece)
        longest = max(longest, len(piece))
        last = piece[-1:]
    out[view or "combined"] = [total, longest, last]
# VmHWM: the peak of this process's own memory since its exec. ru_maxrss would also count
# the parent's peak at the fork (Linux carries it over exec), i.e. this pytest's size.
with open("/proc/self/status") as f:
    hwm = next(line for line in f if line.startswith("VmHWM:"))
out["maxrss_mib"] = int(hwm.split()[1]) / 1024
print(json.dumps(out))
"""


def test_reading_a_huge_line_takes_bounded_memory(sched: LocalScheduler) -> None:
    """200 MB without a newline: delivered whole, in pieces, in a few MiB of memory."""
    size = 200_000_000
    app_id = sched.submit(
        AppDef(
            "huge",
            [Role("w", image="/", entrypoint="sh", args=["-c", f"head -c {size} /dev/zero"])],
        ),
        {},
    )
    wait(sched, app_id)
    proc = subprocess.run(
        [sys.executable, "-c", _READ_HUGE, sched.state_dir, app_id],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    seen = json.loads(proc.stdout)
    for view in ("stdout", "combined"):
        total, longest, last = seen[view]
        assert total == size + 1 and last == "\n", (view, total)
        assert longest <= logs_mod.PIECE, (view, longest)
    assert seen["maxrss_mib"] < 100, seen


def test_an_index_of_another_version_is_a_clear_error(sched: LocalScheduler) -> None:
    app_id = run(sched, py_role("print('hi')"))
    wait(sched, app_id)
    index = log_dir(sched, app_id) / "index"
    index.write_bytes(b"torchx.local/logindex-v9 0\n")
    with pytest.raises(logs_mod.LogFormatError, match=r"index.*is not 'torchx.local/logindex-v1'"):
        list(sched.log_iter(app_id, "w"))
    assert list(sched.log_iter(app_id, "w", streams=Stream.STDOUT)) == ["hi\n"]
    index.unlink()
    (index.parent / "combined.log").write_text("2025-01-01T00:00:00.000000Z stdout hi\n")
    with pytest.raises(logs_mod.LogFormatError, match="written by an earlier torchx-runner"):
        list(sched.log_iter(app_id, "w"))
    assert list(sched.log_iter(app_id, "w", streams=Stream.STDOUT)) == ["hi\n"]


# ----------------------------------------------------------------------------- disk full

_DISK_FULL = """
import json, os, sys, time
from torchx.schedulers.local.scheduler import create_scheduler
from torchx.specs import AppDef, Role
state = sys.argv[1]
s = create_scheduler("t", state_dir=state)
printer = "import sys\\nfor i in range(200000): print(f'line {i} of a chatty app')"
sleeper = s.submit(AppDef("sleeper", [Role("w", image="/", entrypoint="sleep",
                                           args=["300"])]), {"grace_period": 1.0})
deadline = time.monotonic() + 60
while s.describe(sleeper).state.name != "RUNNING":  # a record: no event to wait on
    assert time.monotonic() < deadline, "the sleeper never ran"
    time.sleep(0.01)
app_id = s.submit(AppDef("chatty", [Role("w", image="/", entrypoint=sys.executable,
                                         args=["-c", printer])]), {})
lines = sum(1 for _ in s.log_iter(app_id, "w", should_tail=True))
# what the failed app gave back is taken again: the disk stays full for what follows
fd = os.open(os.path.join(state, "filler"), os.O_WRONLY | os.O_CREAT, 0o600)
try:
    while True:
        os.write(fd, bytes(4096))
except OSError as e:
    assert e.errno == 28, e
desc = s.describe(app_id)
out = {"state": desc.state.name, "msg": desc.msg, "free": os.statvfs(state).f_bfree,
       "lines": sum(1 for _ in s.log_iter(app_id, "w")),
       "listed": sorted(a.state.name for a in s.list()),
       "sleeper": s.describe(sleeper).state.name}
s.cancel(sleeper)
for _ in s.log_iter(sleeper, "w", should_tail=True):
    pass
out["cancelled"] = s.describe(sleeper).state.name
print(json.dumps(out))
"""


def _in_small_tmpfs(script: str, tmp_path: Path) -> list[str]:
    """The command running ``script`` with a 2 MiB tmpfs as its state dir (no root needed).

    An unprivileged user namespace may mount a tmpfs (``unshare --user --map-root-user
    --mount``); the mount lives as long as the processes in it.
    """
    mnt = tmp_path / "small"
    mnt.mkdir()
    code = tmp_path / "script.py"
    code.write_text(script)
    shell = f"mount -t tmpfs -o size=2m tmpfs {mnt} && exec {sys.executable} {code} {mnt}/state"
    return ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", shell]


def _can_unshare() -> bool:
    if not shutil.which("unshare"):
        return False
    probe = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "true"], capture_output=True
    )
    return probe.returncode == 0


@pytest.mark.ci_may_skip(reason="user namespaces are the host kernel's")
def test_a_full_disk_fails_the_app_and_every_command_keeps_working(tmp_path: Path) -> None:
    if not _can_unshare():  # a kernel without user namespaces: the file size limit instead
        pytest.skip("needs unshare --user (see test_a_file_size_limit_fails_the_app)")
    proc = subprocess.run(
        _in_small_tmpfs(_DISK_FULL, tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TORCHX_HOME": str(tmp_path / "home")},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["state"] == "FAILED", seen
    assert seen["msg"].startswith("disk full: No space left on device"), seen
    assert 0 < seen["lines"] < 200_000, seen
    assert seen["free"] == 0, seen  # the disk was full while status, list, log and cancel ran
    assert seen["listed"] == ["FAILED", "RUNNING"], seen
    assert seen["sleeper"] == "RUNNING" and seen["cancelled"] == "CANCELLED", seen


_FSIZE = """
import json, resource, sys
from torchx.schedulers.local.scheduler import create_scheduler
from torchx.specs import AppDef, Role
resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
s = create_scheduler("t", state_dir=sys.argv[1])
printer = "import sys\\nfor i in range(200000): print(f'line {i} of a chatty app')"
app_id = s.submit(AppDef("chatty", [Role("w", image="/", entrypoint=sys.executable,
                                         args=["-c", printer])]), {})
lines = sum(1 for _ in s.log_iter(app_id, "w", should_tail=True))
desc = s.describe(app_id)
print(json.dumps({"state": desc.state.name, "msg": desc.msg, "lines": lines}))
"""


def test_a_file_size_limit_fails_the_app(tmp_path: Path) -> None:
    """The same failure path without a small filesystem: ``ulimit -f`` (EFBIG, SIGXFSZ)."""
    proc = subprocess.run(
        [sys.executable, "-c", _FSIZE, str(tmp_path / "state")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["state"] == "FAILED", seen
    assert seen["msg"].startswith("file size limit reached: File too large"), seen
    assert 0 < seen["lines"] < 200_000, seen


def test_timed_gives_each_block_the_time_its_lines_were_seen(sched: LocalScheduler) -> None:
    import time

    before = time.time()
    app_id = run(
        sched,
        py_role(
            "import sys, time\n"
            "print('a', flush=True); time.sleep(0.6)\n"
            "print('b', file=sys.stderr, flush=True); print('c', flush=True)\n"
        ),
    )
    wait(sched, app_id)
    after = time.time()
    lines = sched.log_iter(app_id, "w")
    timed = list(lines.timed())  # type: ignore[attr-defined]
    assert "".join(text for _, text in timed) == "".join(lines)  # the same text, with times
    seen = {line: t for t, text in timed for line in text.splitlines()}
    assert sorted(seen) == ["a", "b", "c"]
    assert before <= seen["a"] < seen["b"] <= after + 1 and seen["b"] - seen["a"] >= 0.4
    one = list(sched.log_iter(app_id, "w", streams=Stream.STDERR).timed())  # type: ignore[attr-defined]
    assert [text for _, text in one] == ["b\n"] and one[0][0] == seen["b"]

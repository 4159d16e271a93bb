"""The dev/lsf stand-in does what dev/README.md says of it (the documented LSF subset).

These check the stand-in itself, through its commands: the answers and exit statuses
IBM documents, dependencies, %J in output paths, and bkill's INT, TERM, KILL sequence.
"""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path


def _run(*argv: str, stdin: str = "", cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, input=stdin, capture_output=True, text=True, cwd=cwd, timeout=30)


def _submit(*argv: str, stdin: str = "", cwd: Path | None = None) -> str:
    proc = _run("bsub", *argv, stdin=stdin, cwd=cwd)
    match = re.fullmatch(r"Job <(\d+)> is submitted to (default )?queue <\w+>\.\n", proc.stdout)
    assert proc.returncode == 0 and match, proc
    return match.group(1)


def _stat(job: str) -> list[str]:
    out = _run("bjobs", "-noheader", "-o", "stat exit_code delimiter='|'", job).stdout
    return out.strip().split("|")


def _wait(job: str, states: set[str], timeout: float = 20) -> list[str]:
    deadline = time.monotonic() + timeout
    while (row := _stat(job))[0] not in states:
        assert time.monotonic() < deadline, row
        time.sleep(0.1)
    return row


def test_queues_and_their_answers(tmp_path: Path) -> None:
    job = _submit("-q", "short", stdin="true\n", cwd=tmp_path)
    assert _run("bjobs", "-noheader", "-o", "queue", job).stdout == "short\n"
    bad = _run("bsub", "-q", "nope", stdin="true\n")
    assert (bad.returncode, bad.stderr) == (255, "nope: No such queue. Job not submitted.\n")


def test_nothing_found_is_said_as_lsf_says_it() -> None:
    unknown = _run("bjobs", "999999999")
    assert (unknown.returncode, unknown.stderr) == (255, "Job <999999999> is not found\n")
    none = _run("bjobs", "-a", "-P", "no-such-project")
    assert (none.returncode, none.stdout, none.stderr) == (0, "", "No job found\n")
    kill = _run("bkill", "999999999")
    assert kill.returncode == 255 and "No matching job found" in kill.stderr


def test_a_dependency_holds_the_job_and_percent_j_names_the_output(tmp_path: Path) -> None:
    first = _submit("-J", f"dep-{tmp_path.name}", stdin="sleep 1\n", cwd=tmp_path)
    second = _submit(
        "-w", f"done(dep-{tmp_path.name})", "-oo", f"{tmp_path}/out-%J.txt",
        stdin='echo "job $LSB_JOBID after"\n', cwd=tmp_path,
    )  # fmt: skip
    assert _stat(second)[0] == "PEND"
    _wait(first, {"DONE"})
    assert _wait(second, {"DONE"}) == ["DONE", "-"]
    assert (tmp_path / f"out-{second}.txt").read_text() == f"job {second} after\n"


def test_bkill_sends_int_then_term_then_kill(tmp_path: Path) -> None:
    job = _submit(
        "-oo", f"{tmp_path}/out",
        stdin="trap 'echo got INT' INT; trap 'echo got TERM' TERM; echo ready\n"
        "while :; do sleep 0.1; done\n",
        cwd=tmp_path,
    )  # fmt: skip
    _wait(job, {"RUN"})
    deadline = time.monotonic() + 10
    while "ready" not in (tmp_path / "out").read_text():
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert _run("bkill", job).stdout == f"Job <{job}> is being terminated\n"
    assert _wait(job, {"EXIT"}) == ["EXIT", "137"]  # SIGKILL: 128 + 9
    said = (tmp_path / "out").read_text()
    assert "got INT" in said and "got TERM" in said
    again = _run("bkill", job)
    assert again.returncode == 255 and f"Job <{job}>: Job has already finished" in again.stderr


def test_bsub_q_requeues_the_job_on_its_exit_values(tmp_path: Path) -> None:
    """A job exiting with a ``-Q`` value runs again under its id; other values end it."""
    count = tmp_path / "runs"
    job = _submit(
        "-Q", "all ~3", "-oo", f"{tmp_path}/out",
        stdin=f"echo x >> {count}; n=$(wc -l < {count}); [ $n -ge 3 ] && exit 3; exit 75\n",
        cwd=tmp_path,
    )  # fmt: skip
    assert _wait(job, {"EXIT"}) == ["EXIT", "3"]
    assert count.read_text() == "x\nx\nx\n"  # ran three times, same id
    bad = _run("bsub", "-Q", "nine", stdin="true\n")
    assert bad.returncode == 255 and "-Q" in bad.stderr


def test_brequeue_reruns_ended_and_running_jobs(tmp_path: Path) -> None:
    count = tmp_path / "runs"
    done = _submit("-J", f"rq-{tmp_path.name}", stdin=f"echo x >> {count}\n", cwd=tmp_path)
    _wait(done, {"DONE"})
    refused = _run("brequeue", done)  # by default running jobs only
    assert refused.returncode == 255 and f"Job <{done}>" in refused.stderr
    again = _run("brequeue", "-a", "-J", f"rq-{tmp_path.name}")
    assert (again.returncode, again.stdout) == (0, f"Job <{done}> is being requeued\n")
    assert _wait(done, {"DONE"}) == ["DONE", "-"]
    assert count.read_text() == "x\nx\n"
    running = _submit(
        "-oo", f"{tmp_path}/out",
        stdin=f"echo y >> {count}; n=$(grep -c y {count}); [ $n -ge 2 ] && exit 0; "
        "while :; do sleep 0.1; done\n",
        cwd=tmp_path,
    )  # fmt: skip
    deadline = time.monotonic() + 10
    while "y" not in count.read_text():
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert _run("brequeue", running).stdout == f"Job <{running}> is being requeued\n"
    assert _wait(running, {"DONE"}) == ["DONE", "-"]  # killed, then run again
    assert count.read_text().count("y") == 2
    unknown = _run("brequeue", "999999999")
    assert unknown.returncode == 255 and "No matching job found" in unknown.stderr

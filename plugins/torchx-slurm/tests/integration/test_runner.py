"""torchx-slurm through the Runner (what a Python program submitting to Slurm uses)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from apps import meet, two_roles

from torchx.runner import get_runner
from torchx.specs import AppState, parse_app_handle

MET = re.compile(r"rank (\d)/2 met \[0, 1\] on (n\d) via (n\d)")


def test_runner_runs_a_two_node_app_and_reads_each_replica(
    tmp_path: Path, port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with get_runner() as runner:
        handle = runner.run(meet(port=port), "slurm", cfg={"job_dir": str(tmp_path / "job")})
        assert parse_app_handle(handle).scheduler_backend == "slurm"
        status = runner.wait(handle, wait_interval=0.5, timeout=180)
        assert status is not None and status.state == AppState.SUCCEEDED, status
        met = {}
        for k in (0, 1):
            lines = list(runner.log_lines(handle, "meet", k))
            found = [m for m in map(MET.search, lines) if m]
            assert len(found) == 1, lines
            met[k] = found[0].groups()
        assert met[0][0] == "0" and met[1][0] == "1"
        assert met[0][1] != met[1][1] and met[1][2] == met[0][1]
        # the job directory holds each replica's output files
        assert len(list((tmp_path / "job").glob("slurm-*-meet-*.out"))) == 2


def test_runner_describe_and_list(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with get_runner() as runner:
        handle = runner.run(two_roles(), "slurm")
        app = runner.describe(handle)
        assert app is not None
        assert {r.name: r.num_replicas for r in app.roles} == {"ps": 1, "worker": 2}
        listed = {a.app_handle: a for a in runner.list("slurm")}
        assert handle in listed, list(listed)
        # narrowed by a run option, as `torchx list -s slurm -cfg partition=debug` does
        in_debug = {a.app_handle for a in runner.list("slurm", {"partition": "debug"})}
        assert handle in in_debug, in_debug
        status = runner.wait(handle, wait_interval=0.5, timeout=120)
        assert status is not None and status.state == AppState.SUCCEEDED, status
        assert listed[handle].state in {
            AppState.SUBMITTED,
            AppState.PENDING,
            AppState.RUNNING,
            AppState.SUCCEEDED,
        }

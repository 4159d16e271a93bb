"""A sweep on a real backend, through the ``torchx`` command: the same check for every plugin.

The supervisor of a sweep (:mod:`torchx.sweeps.supervisor`) knows nothing of the
scheduler: it submits, polls ``status`` and cancels through the Runner. What differs per
backend is what the scheduler reports: states, start and end times, logs. So each
plugin's integration suite runs :func:`check_six_trials_two_at_once` against its own
backend::

    def test_a_sweep(cli):
        check_six_trials_two_at_once(cli, image=str(cli.work))

Six trials of a file component (``--grid a=1,2,3 --grid b=x,y``), at most two at once:
all succeed, the status table and ``list --sweeps`` show them, each trial's log has its
own line, and the trials' own start and end times, as the scheduler reports them, never
overlap by more than two. ``delete`` then removes the sweep and its trials' apps.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from torchx.schedulers.testing.cli import TorchxCli
from torchx.schedulers.testing.functions import max_overlap

__all__ = ["COMPONENT", "check_six_trials_two_at_once", "most_at_once"]

#: The trials' component, written as ``sweep_trial.py`` into the test's working directory.
COMPONENT = '''
from torchx.specs import AppDef, Resource, Role

def trial(a: str = "1", b: str = "x", image: str = ".", seconds: str = "2") -> AppDef:
    """Prints its grid point, runs a little while, and ends well."""
    script = f"echo trial {a}-{b} started; sleep {seconds}; echo trial {a}-{b} done"
    role = Role(
        "trial", image=image, entrypoint="sh", args=["-c", script],
        resource=Resource(cpu=1, gpu=0, memMB=128),
    )
    return AppDef("trial", [role])
'''


def most_at_once(spans: Sequence[tuple[float, float]]) -> int:
    """The most spans ``[start, end)`` that hold at any one span's start, compared to the
    second.

    That is :func:`~torchx.schedulers.testing.functions.max_overlap` of the spans cut
    to the second. Schedulers report times to the second (Slurm, docker's creation time) or finer (an
    exit time), sometimes both in one app: a trial created 0.2 s after another ended may
    read as started 0.7 s before that end. Both cut to the whole second, a trial started
    after another ended never starts before that one's end.

    >>> most_at_once([(0, 2), (1, 3), (2, 4)])
    2
    >>> most_at_once([(29.0, 31.3), (29.0, 31.5), (31.0, 33.6)])  # 31.0: created at 31.6
    2
    """
    return max_overlap([(math.floor(s), math.floor(e)) for s, e in spans])


def check_six_trials_two_at_once(
    cli: TorchxCli, image: str, cfg: str | None = None, timeout: float = 600
) -> dict[str, Any]:
    """Runs the six-trial sweep on ``cli.scheduler`` (``-cfg cfg`` if given) and checks it
    (see the module's docs); its final ``SweepStatus`` data."""
    (cli.work / "sweep_trial.py").write_text(COMPONENT)
    args = ["sweep", "-s", cli.scheduler, *(["-cfg", cfg] if cfg else [])]
    proc = cli(
        *args, "--max-parallel", "2", "--grid", "a=1,2,3", "--grid", "b=x,y", "--wait",
        "sweep_trial.py:trial", "--image", image, timeout=timeout, rc=None,
    )  # fmt: skip
    handle = proc.stdout.splitlines()[0] if proc.stdout else ""
    assert handle.startswith("sweep://sw-"), f"{proc.stdout}\n{proc.stderr}"
    try:
        assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
        assert "Traceback" not in proc.stderr, proc.stderr
        return _check(cli, handle, proc.stdout)
    finally:  # the sweep and its trials' apps are gone, whatever failed
        cli("delete", "--force", handle, rc=None)


def _check(cli: TorchxCli, handle: str, printed: str) -> dict[str, Any]:
    doc = json.loads(cli("status", "--json", handle).stdout)
    assert doc["kind"] == "SweepStatus", doc
    data: dict[str, Any] = doc["data"]
    trials = data["trials"]
    assert data["state"] == "SUCCEEDED", printed
    assert [t["state"] for t in trials] == ["SUCCEEDED"] * 6, printed
    assert all(t["handle"].startswith(f"{cli.scheduler}://") for t in trials), trials
    spans = [(float(t["startTime"]), float(t["endTime"])) for t in trials]
    assert all(s <= e for s, e in spans), spans
    assert most_at_once(spans) <= 2, spans
    assert "State: SUCCEEDED (6 SUCCEEDED)" in printed, printed
    assert handle in cli("list", "--sweeps").stdout
    for t in trials:
        point = f"{t['params']['a']}-{t['params']['b']}"
        out = cli("log", t["handle"]).stdout
        assert f"trial {point} started" in out and f"trial {point} done" in out, out
    deleted = cli("delete", handle)
    assert deleted.stdout.strip() == f"deleted {handle} and its 6 trial apps", deleted.stdout
    assert handle not in cli("list", "--sweeps").stdout
    return data

"""The sweep supervisor's pacing: quick after a change, backing off while nothing changes,
and a cancel seen at once even during a long pause."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from torchx.sweeps import record, supervisor


def test_the_pause_grows_while_nothing_changes_and_resets_on_a_change() -> None:
    pauses = [supervisor.INTERVAL]
    for _ in range(20):
        pauses.append(supervisor.next_interval(pauses[-1], changed=False))
    assert pauses[1] > pauses[0] and pauses == sorted(pauses)
    assert pauses[-1] == supervisor.MAX_INTERVAL  # capped
    # an hour of nothing changing is a few hundred looks, not 18,000
    assert sum(1 for _ in _looks(3600.0)) < 800
    assert supervisor.next_interval(supervisor.MAX_INTERVAL, changed=True) == supervisor.INTERVAL


def _looks(seconds: float) -> list[float]:
    t, pause, out = 0.0, supervisor.INTERVAL, []
    while t < seconds:
        pause = supervisor.next_interval(pause, changed=False)
        t += pause
        out.append(t)
    return out


def test_a_cancel_ends_a_long_pause_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TORCHX_HOME", str(tmp_path))
    sid = Path(record.new_sweep_dir()).name
    timer = threading.Timer(0.3, record.request_cancel, [sid])
    timer.start()
    t0 = time.monotonic()
    supervisor._pause(sid, 30.0)
    took = time.monotonic() - t0
    timer.join()
    assert 0.25 < took < 0.3 + 2 * supervisor.INTERVAL + 0.5, took

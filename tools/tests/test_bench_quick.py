"""``bench/run.py --quick`` selects exactly its quick cases, each of which exists.

The quick selection is what bench/README.md tells people to run first; a case renamed
or removed must not silently shrink it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_quick_lists_every_quick_case_and_nothing_else() -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import run  # bench/run.py
    finally:
        sys.path.remove(str(ROOT / "bench"))
    proc = subprocess.run(
        [sys.executable, "bench/run.py", "--quick", "--list"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    listed = [line.split()[0] for line in proc.stdout.splitlines() if line.strip()]
    assert sorted(listed) == sorted(run.QUICK_CASES)
    assert len(set(run.QUICK_CASES)) == len(run.QUICK_CASES) >= 10

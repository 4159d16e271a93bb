"""``torchx log`` and ``run --log`` with a lot of output: nothing lost, lines whole, little memory.

The output goes to a file (not a pipe the test would hold in memory); the command's peak
memory is read from ``os.wait4``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from helpers import TORCHX, Cli

N = 1_000_001
PAD = "y" * 40

# ~57 MB in well under a second, then exit: a burst that used to lose its last lines
_BURST = f"""
import sys
out = sys.stdout.buffer
for start in range(0, {N}, 10000):
    out.write(b"".join(b"line %09d {PAD}\\n" % i for i in range(start, min(start + 10000, {N}))))
out.flush()
"""


# Runs argv[2:] as a child and writes its exit status and peak RSS (KiB) to argv[1]. Linux
# carries a process's peak RSS over exec into the new program, so a child started straight
# from this pytest would report pytest's own size; started from this small wrapper, the
# figure is torchx's.
_PEAK = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(f"{os.waitstatus_to_exitcode(status)} {usage.ru_maxrss}")
"""


def _to_file(cli: Cli, out: Path, *args: str) -> float:
    """Runs torchx with stdout to ``out``; returns its peak RSS in MiB (it must exit 0)."""
    report = out.with_name(out.name + ".peak")
    with open(out, "wb") as f:
        proc = subprocess.run(
            [sys.executable, "-c", _PEAK, str(report), TORCHX, *args],
            cwd=cli.work,
            env={**os.environ, **cli.env},
            stdout=f,
            stderr=subprocess.PIPE,
            check=False,
        )
    code, peak_kib = report.read_text().split()
    assert int(code) == 0, proc.stderr.decode(errors="replace")
    return int(peak_kib) / 1024


def _check_burst(path: Path) -> None:
    i = 0
    with open(path) as f:
        for line in f:
            if i == 0 and line.startswith("local://"):  # run prints the handle first
                continue
            assert line == f"python/0 line {i:09d} {PAD}\n", (i, line[:100])
            i += 1
    assert i == N, f"{i} of {N} lines"


def test_run_log_and_log_show_every_line_of_a_burst(cli: Cli, tmp_path: Path) -> None:
    out = tmp_path / "run.txt"
    _to_file(cli, out, "run", "--wait", "--log", "utils.python", "-c", _BURST)
    _check_burst(out)
    app_id = next((cli.state / "apps").iterdir()).name
    _to_file(cli, out, "log", f"local://torchx/{app_id}")
    _check_burst(out)


def test_long_lines_of_many_replicas_stay_whole(cli: Cli, tmp_path: Path) -> None:
    """3 MiB lines (delivered in pieces) of 3 replicas at once are never interleaved."""
    code = (
        "import os, sys\n"
        "k = os.environ['TORCHX_REPLICA_ID']\n"
        "for i in range(3):\n"
        "    sys.stdout.write(f'short {k} {i}\\n' + k * (3 << 20) + '\\n')\n"
    )
    handle = cli("run", "--wait", "utils.python", "--num_replicas", "3", "-c", code).stdout.strip()
    out = tmp_path / "log.txt"
    _to_file(cli, out, "log", handle)
    seen: dict[str, list[str]] = {}
    with open(out) as f:
        for line in f:
            prefix, text = line.rstrip("\n").split(" ", 1)
            k = prefix.split("/")[1]
            assert text.startswith("short ") or text == k * (3 << 20), (prefix, text[:50])
            seen.setdefault(k, []).append(text[:20])
    assert sorted(seen) == ["0", "1", "2"]
    for k, texts in seen.items():
        assert len(texts) == 6, (k, texts)


def test_a_huge_line_is_printed_whole_in_little_memory(cli: Cli, tmp_path: Path) -> None:
    size = 100_000_000
    handle = cli(
        "run", "--wait", "utils.sh", "sh", "-c", f"head -c {size} /dev/zero | tr '\\0' z"
    ).stdout.strip()
    out = tmp_path / "huge.txt"
    rss = _to_file(cli, out, "log", "--streams", "stdout", handle)
    assert out.stat().st_size == len("sh/0 ") + size + 1
    with open(out, "rb") as f:
        assert f.read(10) == b"sh/0 zzzzz"
        f.seek(-2, os.SEEK_END)
        assert f.read() == b"z\n"
    assert rss < 100, f"torchx log took {rss:.0f} MiB for a {size // 10**6} MB line"

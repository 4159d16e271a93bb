"""Lines longer than the engine's 16 KiB log pieces come back whole, through ``torchx``.

The engine's log driver cuts a long line into 16 KiB messages, each sent with a
timestamp of its own; ``torchx log`` (read at once) and ``torchx run --log`` (followed)
give each line back once, whole, with nothing of the engine's in it.
"""

from __future__ import annotations

import json

from dockercmd import busybox

from torchx.schedulers.testing.cli import TorchxCli

# a 20 KB JSON line, a 10 MB line, a short stderr line between them, a last short line
SCRIPT = (
    "big=$(head -c 20000 /dev/zero | tr '\\0' a); "
    'printf \'{"k": "%s"}\\n\' "$big"; '
    "echo between >&2; "
    "head -c 10000000 /dev/zero | tr '\\0' x; echo; "
    "echo end"
)


def _check(lines: list[str]) -> None:
    # the engine times each stream's lines as it reads them: stderr's may come first
    out = [line for line in lines if line != "between"]
    assert [len(line) for line in out] == [20_009, 10_000_000, 3], [line[:80] for line in lines]
    assert json.loads(out[0]) == {"k": "a" * 20_000}
    assert out[1:] == ["x" * 10_000_000, "end"]
    assert lines.count("between") == 1, [line[:80] for line in lines]


def test_long_lines_come_back_whole(cli: TorchxCli) -> None:
    handle, proc = cli.run(
        "--wait", "--log", "utils.sh", "--image", busybox(), "sh", "-c", SCRIPT
    )  # followed while it runs
    followed = [
        line.split(" ", 1)[1] for line in proc.stdout.splitlines()[1:] if line.startswith("sh/0 ")
    ]
    _check(followed)
    read = cli("log", handle).stdout.splitlines()  # read at once, after the end
    _check([line.split(" ", 1)[1] for line in read])
    stdout_only = cli("log", "--streams", "stdout", handle).stdout.splitlines()
    assert [len(line.split(" ", 1)[1]) for line in stdout_only] == [20_009, 10_000_000, 3]

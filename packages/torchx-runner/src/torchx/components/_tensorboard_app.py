"""The process ``metrics.tensorboard`` runs: TensorBoard, started and stopped on files.

``python -m torchx.components._tensorboard_app [--timeout S] [--start_on_file F]
[--exit_on_file F] -- TENSORBOARD_ARGS``: waits for the start file (if given),
starts ``python -m tensorboard.main TENSORBOARD_ARGS``, and stops it after the
timeout or once the exit file exists. Exits 1 with one line naming the package
when tensorboard is not installed.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import time

_POLL = 1.0  # seconds between looks at the start/exit files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="metrics.tensorboard")
    parser.add_argument("--timeout", type=float, default=3600.0)
    parser.add_argument("--start_on_file", default="")
    parser.add_argument("--exit_on_file", default="")
    parser.add_argument("tensorboard_args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    rest = (
        args.tensorboard_args[1:] if args.tensorboard_args[:1] == ["--"] else args.tensorboard_args
    )
    if importlib.util.find_spec("tensorboard") is None:
        print(
            "metrics.tensorboard: the tensorboard package is not installed where the app runs; "
            "install it (pip install tensorboard) or use an image that has it",
            file=sys.stderr,
        )
        return 1
    deadline = time.monotonic() + args.timeout
    while args.start_on_file and not os.path.exists(args.start_on_file):
        if time.monotonic() >= deadline:
            print(
                f"metrics.tensorboard: {args.start_on_file} did not appear in time", file=sys.stderr
            )
            return 1
        time.sleep(_POLL)
    proc = subprocess.Popen([sys.executable, "-m", "tensorboard.main", *rest])
    try:
        while proc.poll() is None:
            if time.monotonic() >= deadline or (
                args.exit_on_file and os.path.exists(args.exit_on_file)
            ):
                proc.terminate()
                proc.wait()
                return 0
            try:
                proc.wait(timeout=_POLL)
            except subprocess.TimeoutExpired:
                pass
        return proc.returncode
    finally:
        if proc.poll() is None:
            proc.kill()


if __name__ == "__main__":
    sys.exit(main())

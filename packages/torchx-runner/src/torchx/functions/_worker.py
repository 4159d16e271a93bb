"""The replica side of :func:`torchx.functions.submit`: ``python -m torchx.functions._worker DIR``.

Loads ``(fn, args, kwargs)`` from the job directory ``DIR``, calls it and writes the
outcome to ``DIR/result.pkl`` (see :mod:`torchx.functions._channel`). Exit status: 0
when the function returned, 1 when it raised, 3 when the call could not be loaded
(another Python minor version, a module that is not importable here); in that last
case one line on stderr says what was missing, not an unpickling traceback.
"""

from __future__ import annotations

import json
import pickle
import sys
import traceback
from pathlib import Path
from typing import Any

from torchx.functions._channel import (
    EXIT_LOAD_ERROR,
    META,
    PAYLOAD,
    RESULT,
    write_atomically,
)


def _dumps(obj: object) -> bytes:
    """Plain pickle, else cloudpickle where it is installed (a result holding a lambda)."""
    try:
        return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:
        try:
            import cloudpickle  # type: ignore[import-not-found,unused-ignore]
        except ImportError:
            raise
        data: bytes = cloudpickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        return data


def _load_error(job_dir: Path, message: str) -> int:
    print(f"torchx.functions: {message}", file=sys.stderr)
    write_atomically(job_dir / RESULT, pickle.dumps(("load_error", message), protocol=4))
    return EXIT_LOAD_ERROR


def _load(job_dir: Path) -> tuple[Any, tuple[Any, ...], dict[str, Any]] | str:
    """The call, or a one-line reason why it cannot be loaded here."""
    meta = json.loads((job_dir / META).read_text())
    want = tuple(meta["python"])
    have = sys.version_info[:2]
    if want != have:
        return (
            f"the function was pickled by Python {want[0]}.{want[1]} but this replica runs"
            f" Python {have[0]}.{have[1]} ({sys.executable}): use an image with Python"
            f" {want[0]}.{want[1]}"
        )
    # the submitter's import path, so its modules (and its script's folder) import here
    sys.path[:0] = [p for p in meta["sys_path"] if p not in sys.path]
    try:
        fn, args, kwargs = pickle.loads((job_dir / PAYLOAD).read_bytes())
    except ImportError as e:
        return (
            f"cannot load the function here: {e} (its module must be importable on the"
            " replica, or install cloudpickle to send it by value)"
        )
    except Exception as e:
        return f"cannot load the function here: {type(e).__name__}: {e}"
    return fn, tuple(args), dict(kwargs)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m torchx.functions._worker JOB_DIR", file=sys.stderr)
        return 2
    job_dir = Path(argv[0])
    loaded = _load(job_dir)
    if isinstance(loaded, str):
        return _load_error(job_dir, loaded)
    fn, args, kwargs = loaded
    try:
        value = fn(*args, **kwargs)
    except BaseException as e:  # SystemExit and KeyboardInterrupt travel back too
        tb = traceback.format_exc()
        sys.stderr.write(tb)  # also in `torchx log`, where a user looks first
        try:
            data = _dumps(("raised", e, tb))
            pickle.loads(data)  # an exception that pickles but does not unpickle
        except Exception:
            data = pickle.dumps(("raised_text", type(e).__qualname__, str(e), tb))
        write_atomically(job_dir / RESULT, data)
        return 1
    try:
        data = _dumps(("ok", value))
    except Exception as e:
        message = f"the return value could not be pickled: {type(e).__name__}: {e}"
        print(f"torchx.functions: {message}", file=sys.stderr)
        data = pickle.dumps(("raised_text", "PicklingError", message, ""))
        write_atomically(job_dir / RESULT, data)
        return 1
    write_atomically(job_dir / RESULT, data)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

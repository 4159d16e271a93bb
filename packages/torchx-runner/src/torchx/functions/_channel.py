"""What a call and its result look like in transit, and the replica's side of a call.

Standard library only, and no import of ``torchx``: the shared-disk worker
(:mod:`torchx.functions._worker`) imports this module on the replica, and on schedulers
without a shared disk the submitter sends this module's own source as the replica's
program (``python3 -c``, see :mod:`torchx.functions._logs`), so an image with Python
alone runs it. One copy of the logic for both channels.

The call is ``(fn, args, kwargs)`` pickled (by reference with :mod:`pickle`, or by value
with cloudpickle) with its *meta*: the submitter's Python version (``[major, minor]``),
read before anything is unpickled so a replica with another Python says so in one line
instead of failing inside pickle, and its ``sys.path``. The outcome is pickled too:
``("ok", value)``, ``("raised", exception, traceback_text)``, ``("raised_text",
type_name, message, traceback_text)`` for an exception that cannot be pickled, or
``("load_error", message)`` when the call could not even be loaded.

On a shared disk, one directory per call: ``meta.json``, ``payload.pkl`` and
``result.pkl``, the last written once, atomically. Through the replica's log: the call
in the variable :data:`CALL_VAR` (JSON: the meta, a token, the payload in base64), the
outcome printed last on stdout as frames (:func:`frames`): ``TORCHX-FN-RESULT TOKEN
SEQ/N BASE64`` lines of at most :data:`FRAME_CHARS` characters of base64, then
``TORCHX-FN-END TOKEN N SHA256`` over the decoded bytes.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import pickle
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

META = "meta.json"
PAYLOAD = "payload.pkl"
RESULT = "result.pkl"

#: The worker's exit status when the call could not be loaded (another Python, a module
#: that is not importable there): the app ends FAILED, the outcome says why.
EXIT_LOAD_ERROR = 3

#: The environment variable that carries the call where no disk is shared.
CALL_VAR = "TORCHX_FN_CALL"
FRAME = "TORCHX-FN-RESULT"
END = "TORCHX-FN-END"
#: Base64 characters in one frame: a frame line stays under 16 KiB, the piece size
#: Docker's log drivers cut longer lines into (awslogs then sends each piece as its own
#: CloudWatch event, whose limit is 256 KiB), so no reader has to join pieces.
FRAME_CHARS = 8192
#: The largest pickled outcome sent through the log (8 MiB, about 11 MiB of log lines);
#: a larger one is replaced by an error that says so (:func:`log_outcome`).
RESULT_CAP = 8 * 1024 * 1024

Call = tuple[Any, tuple[Any, ...], dict[str, Any]]


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file renamed into place.

    A reader (the submitter polling for the result) never sees half a file, and a
    replica killed while writing leaves no result rather than a broken one.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def dumps(obj: object) -> bytes:
    """Plain pickle, else cloudpickle where it is installed (a result holding a lambda,
    or a class that came by value)."""
    try:
        return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:
        try:
            import cloudpickle  # type: ignore[import-not-found,unused-ignore]
        except ImportError:
            raise
        data: bytes = cloudpickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        return data


def load(meta: dict[str, Any], payload: bytes) -> Call | str:
    """The call, or a one-line reason why it cannot be loaded here."""
    want = tuple(meta["python"])
    have = sys.version_info[:2]
    if want != have:
        return (
            f"the function was pickled by Python {want[0]}.{want[1]} but this replica runs"
            f" Python {have[0]}.{have[1]} ({sys.executable}): use an image with Python"
            f" {want[0]}.{want[1]}"
        )
    # the submitter's import path, so its modules (and its script's folder) import here
    sys.path[:0] = [p for p in meta.get("sys_path", []) if p not in sys.path]
    try:
        fn, args, kwargs = pickle.loads(payload)
    except ImportError as e:
        if getattr(e, "name", None) == "cloudpickle":
            return (
                "the function was sent by value (cloudpickle) but cloudpickle is not"
                " installed here: install cloudpickle in the image"
            )
        return (
            f"cannot load the function here: {e} (its module must be importable on the"
            " replica, or install cloudpickle to send it by value)"
        )
    except Exception as e:
        return f"cannot load the function here: {type(e).__name__}: {e}"
    return fn, tuple(args), dict(kwargs)


def call(loaded: Call) -> tuple[int, bytes]:
    """Runs the call: ``(exit status, pickled outcome)``; 0 returned, 1 raised."""
    fn, args, kwargs = loaded
    try:
        value = fn(*args, **kwargs)
    except BaseException as e:  # SystemExit and KeyboardInterrupt travel back too
        tb = traceback.format_exc()
        sys.stderr.write(tb)  # also in `torchx log`, where a user looks first
        try:
            data = dumps(("raised", e, tb))
            pickle.loads(data)  # an exception that pickles but does not unpickle
        except Exception:
            data = pickle.dumps(("raised_text", type(e).__qualname__, str(e), tb))
        return 1, data
    try:
        return 0, dumps(("ok", value))
    except Exception as e:
        message = f"the return value could not be pickled: {type(e).__name__}: {e}"
        print(f"torchx.functions: {message}", file=sys.stderr)
        return 1, pickle.dumps(("raised_text", "PicklingError", message, ""))


def load_error(message: str) -> tuple[int, bytes]:
    print(f"torchx.functions: {message}", file=sys.stderr)
    return EXIT_LOAD_ERROR, pickle.dumps(("load_error", message), protocol=4)


def run(meta: dict[str, Any], payload: bytes) -> tuple[int, bytes]:
    """Loads and runs one call: ``(exit status, pickled outcome)``."""
    loaded = load(meta, payload)
    if isinstance(loaded, str):
        return load_error(loaded)
    return call(loaded)


# -- through the replica's log --------------------------------------------------------------


def frames(token: str, data: bytes) -> Iterator[str]:
    """The lines that carry ``data`` (each ends with a newline; at least one frame)."""
    text = base64.b64encode(data).decode("ascii")
    chunks = [text[i : i + FRAME_CHARS] for i in range(0, len(text), FRAME_CHARS)] or [""]
    for seq, chunk in enumerate(chunks):
        yield f"{FRAME} {token} {seq}/{len(chunks)} {chunk}\n"
    yield f"{END} {token} {len(chunks)} {hashlib.sha256(data).hexdigest()}\n"


def log_outcome(code: int, data: bytes) -> tuple[int, bytes]:
    """``(code, data)``, or an error outcome when ``data`` is over :data:`RESULT_CAP`."""
    if len(data) <= RESULT_CAP:
        return code, data
    message = (
        f"the outcome pickles to {len(data)} bytes, over the {RESULT_CAP} bytes the"
        " replica's log carries back: write large results to storage and return their"
        " URL, or use a scheduler with a shared disk (local, slurm, lsf)"
    )
    print(f"torchx.functions: {message}", file=sys.stderr)
    return 1, pickle.dumps(("raised_text", "ResultTooLarge", message, ""))


def log_main() -> int:
    """The replica's program where no disk is shared: the call from :data:`CALL_VAR`,
    the outcome printed last on stdout as frames (after whatever the function printed)."""
    sent = json.loads(os.environ[CALL_VAR])
    code, data = log_outcome(*run(sent["meta"], base64.b64decode(sent["payload"])))
    out = sys.__stdout__
    assert out is not None
    sys.stdout.flush()
    # a function that printed without a final newline: the first frame starts a line
    out.write("\n")
    for line in frames(sent["token"], data):
        out.write(line)
    out.flush()
    return code

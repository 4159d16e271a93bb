"""The job directory format shared by :func:`torchx.functions.submit` and its worker.

Standard library only: the worker imports this module on the replica, where start-up
time is part of every call's overhead. One directory per call:

``meta.json``
    the submitter's Python version (``[major, minor]``) and its ``sys.path``, read
    before anything is unpickled, so a replica with another Python says so in one line
    instead of failing inside pickle
``payload.pkl``
    ``(fn, args, kwargs)``, pickled by reference (plain :mod:`pickle`) or by value
    (cloudpickle)
``result.pkl``
    written once by the worker, atomically (a temporary file renamed into place), so
    a reader sees either no result or all of it: ``("ok", value)``,
    ``("raised", exception, traceback_text)``, ``("raised_text", type_name, message,
    traceback_text)`` for an exception that cannot be pickled, or ``("load_error",
    message)`` when the call could not even be loaded
"""

from __future__ import annotations

import os
from pathlib import Path

META = "meta.json"
PAYLOAD = "payload.pkl"
RESULT = "result.pkl"

#: The worker's exit status when the call could not be loaded (another Python, a module
#: that is not importable there): the app ends FAILED, ``result.pkl`` says why.
EXIT_LOAD_ERROR = 3


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

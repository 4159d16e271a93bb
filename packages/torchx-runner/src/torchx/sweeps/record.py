"""A sweep's record on disk: ``<state dir>/sweeps/<id>/``, next to the local scheduler's apps.

Layout (the state directory is the local scheduler's: ``$TORCHX_HOME``, else
``$XDG_STATE_HOME/torchx``, else ``~/.local/state/torchx``)::

    sweeps/<id>/sweep.json       the sweep and its trials (formatVersion torchx.sweep/v1)
    sweeps/<id>/cancel           present once the sweep was cancelled
    sweeps/<id>/supervisor.log   the supervisor's own output (errors only, normally)
    sweeps/<id>/supervisor.pid   its process id (a sweep not ended whose supervisor is
                                 gone is LOST)

``sweep.json`` is written only by the one who creates the sweep and then by its
supervisor, each time atomically (a reader never sees half a record, and needs no
lock). Cancelling writes the ``cancel`` file, which the supervisor reads before it
submits anything: so a cancelled sweep submits no more trials.
"""

from __future__ import annotations

import json
import os
import re

from torchx.schedulers.helpers.files import write_private_atomic
from torchx.schedulers.local.state import default_state_dir, ensure_private_dir
from torchx.sweeps.grid import SweepError

TYPE_CHECKING = False  # typing costs milliseconds that `torchx status sweep://` does not spend
if TYPE_CHECKING:
    from typing import Any

#: The version of ``sweep.json``; a reader refuses another.
FORMAT_VERSION = "torchx.sweep/v1"
#: The scheme of a sweep's handle: ``sweep://<id>``.
SCHEME = "sweep://"
#: A trial's states once it ended (the app's, or CANCELLED for one never submitted).
TERMINAL = frozenset({"SUCCEEDED", "FAILED", "CANCELLED"})

_ID = re.compile(r"sw-[a-z0-9]{8,32}")


def sweeps_dir() -> str:
    """Where every sweep's record is (created on first use, private)."""
    return os.path.join(default_state_dir(), "sweeps")


def sweep_id(handle: str) -> str:
    """The id of ``sweep://ID`` (or of a bare id); a malformed one is refused in one line."""
    sid = handle[len(SCHEME) :] if handle.startswith(SCHEME) else handle
    if not _ID.fullmatch(sid):
        raise SweepError(f"{handle!r} is not a sweep handle (expected sweep://sw-...)")
    return sid


def sweep_dir(sid: str) -> str:
    return os.path.join(sweeps_dir(), sid)


def new_sweep_dir() -> str:
    """Makes a new sweep's directory; its id is the directory's name."""
    import secrets
    import string

    ensure_private_dir(sweeps_dir())
    alphabet = string.ascii_lowercase + string.digits
    while True:
        sid = "sw-" + "".join(secrets.choice(alphabet) for _ in range(10))
        path = sweep_dir(sid)
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            continue
        return path


def load(sid: str) -> dict[str, Any]:
    """The record of sweep ``sid``; one that does not exist, or of another version, is
    refused in one line."""
    path = os.path.join(sweep_dir(sid), "sweep.json")
    try:
        with open(path, encoding="utf-8") as f:
            doc: dict[str, Any] = json.load(f)
    except FileNotFoundError:
        raise SweepError(
            f"no sweep {SCHEME}{sid}: it does not exist here (see 'torchx list')"
        ) from None
    except (OSError, ValueError) as e:
        raise SweepError(f"cannot read {path}: {e}") from None
    if doc.get("formatVersion") != FORMAT_VERSION:
        raise SweepError(
            f"{path} is of format {doc.get('formatVersion')!r}, not {FORMAT_VERSION}: "
            "written by another torchx version"
        )
    return doc


def save(doc: dict[str, Any]) -> None:
    """Replaces the sweep's record atomically."""
    path = os.path.join(sweep_dir(doc["id"]), "sweep.json")
    write_private_atomic(path, json.dumps(doc, indent=1) + "\n", fsync=False)


def cancel_requested(sid: str) -> bool:
    return os.path.exists(os.path.join(sweep_dir(sid), "cancel"))


def request_cancel(sid: str) -> None:
    write_private_atomic(os.path.join(sweep_dir(sid), "cancel"), "")


def all_ids() -> list[str]:
    """Every sweep's id (with a record), in no particular order."""
    try:
        names = [n for n in os.listdir(sweeps_dir()) if _ID.fullmatch(n)]
    except FileNotFoundError:
        return []
    return [n for n in names if os.path.exists(os.path.join(sweep_dir(n), "sweep.json"))]


def pid_alive(pid: object) -> bool:
    """Whether the process ``pid`` still exists (a zombie counts as gone)."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return False


def supervisor_pid(sid: str) -> int | None:
    """The pid of the sweep's supervisor, once :func:`torchx.sweeps.sweep` has started it."""
    try:
        with open(os.path.join(sweep_dir(sid), "supervisor.pid"), encoding="ascii") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None

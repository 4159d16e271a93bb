"""Where an app's private directory is, and what it says, read without LSF: the light part.

:mod:`torchx_lsf.jobdir` makes and writes the app's directory ``JOBDIR/.torchx-lsf/<app
id>/``; this module only finds and reads it: from the output directory of the app's jobs
(``bsub -outdir``, which ``bjobs`` shows), whether it is a private directory of the
user's, whether ``cancel`` left its mark there, how often the app was restarted, and
whether ``delete`` removed it. The
scheduler (through :mod:`torchx_lsf.jobdir`) and the quick handler
(:mod:`torchx_lsf.quick`) both read it here; it imports ``os`` and ``stat`` only.
"""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False  # not the typing module: its import costs the quick handler milliseconds
if TYPE_CHECKING:
    from collections.abc import Iterable

#: The sub-directory of the job directory holding one private directory per app.
STATE_DIR = ".torchx-lsf"
#: The file whose presence says that the app was cancelled through torchx.
CANCELLED = "cancelled"
#: The file counting the app's restarts, written by the replica that reruns the app
#: (:mod:`torchx_lsf.request` says how LSF retries an app).
RESTARTS = "restarts"


def is_private_dir(path: str) -> bool:
    """Whether ``path`` is a directory (not a link) of the user's that only they can use."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o077


def find_app_dir(app_id: str, output_dirs: Iterable[str]) -> str:
    """The app's private directory, from its jobs' output directories (bsub -outdir); "" if
    none is a private directory of the user's named as the app's."""
    for path in (d.rstrip("/") for d in output_dirs):
        if path.endswith(f"/{STATE_DIR}/{app_id}") and os.path.isabs(path) and is_private_dir(path):
            return path
    return ""


def was_deleted(app_id: str, output_dirs: Iterable[str]) -> bool:
    """Whether ``torchx delete`` removed the app: its jobs' output directory (bsub -outdir)
    is gone from a ``.torchx-lsf`` this user can see and owns.

    LSF shows ended jobs until its CLEAN_PERIOD and has no call that forgets one: the
    app's directory is what says it is still there. A ``.torchx-lsf`` this host cannot
    see (a file system not mounted here) says nothing: the app is not taken as deleted.
    """
    for path in (d.rstrip("/") for d in output_dirs):
        if not (path.endswith(f"/{STATE_DIR}/{app_id}") and os.path.isabs(path)):
            continue
        if is_private_dir(os.path.dirname(path)) and not os.path.lexists(path):
            return True
    return False


def is_cancelled(app_dir: str) -> bool:
    """Whether the app of ``app_dir`` was cancelled through torchx (its mark is there)."""
    return bool(app_dir) and os.path.exists(os.path.join(app_dir, CANCELLED))


def restarts(app_dir: str) -> int:
    """How often the app of ``app_dir`` was rerun after a failure (0 without a count)."""
    if not app_dir:
        return 0
    try:
        with open(os.path.join(app_dir, RESTARTS), encoding="utf-8") as f:
            text = f.read(32).strip()
    except OSError:
        return 0
    return int(text) if text.isdigit() else 0

"""The submitted AppDef, kept in a private file beside the app, read back from any shell.

Batch systems such as Slurm or LSF keep a job's name, not its AppDef. A scheduler built
on one keeps the AppDef itself, in a state directory of the app's (its job directory),
so that ``describe`` gives it back from any later process. :func:`save` writes it into
``STATE_DIR/appdef.json``, a file only the user can read (0600, in a 0700 directory):
the roles' env may hold secrets, which ``describe`` gives back whole (an AppDef ready to
run again); the ``torchx`` command masks secret-looking values when it prints one.
The run options it was submitted with go in the same document, masked when written
(``save(..., run_options=cfg)``; :func:`load_with_options` gives them back).

The file is the serializer's own versioned JSON document (``torchx.specs/v1``, see
:mod:`torchx.specs.appdef_json`, written and read without importing cattrs, so ``torchx
run`` and every ``torchx status`` stay cheap). :func:`load` trusts it only when it is a
regular file (never a link) that is the user's own and that nobody else can read or
write: on a shared filesystem nobody else can have planted it. Reading JSON runs no
code, and any file that is not such a document gives no AppDef (``describe`` then has
empty roles), never a wrong one.

>>> import tempfile
>>> from torchx.specs import AppDef, Role
>>> d = tempfile.mkdtemp()
>>> app = AppDef("echo", [Role("hello", image="/tmp", entrypoint="echo", env={"TOKEN": "s3"})])
>>> save(d, app)
>>> load(d) == app
True
>>> save(d, app, run_options={"partition": "gpu", "mail_password": "pw"})
>>> load_with_options(d)[1]
{'mail_password': '****', 'partition': 'gpu'}
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from typing import Any

from torchx.schedulers.helpers.files import write_private_atomic
from torchx.specs import AppDef

#: The file, in the app's state directory, holding the submitted AppDef.
FILE = "appdef.json"

__all__ = ["FILE", "load", "load_with_options", "run_options_of", "save"]


def run_options_of(info: Any) -> Mapping[str, Any] | None:
    """The run options a dry run's info was made with (``info.cfg``, resolved), or None
    for an ``AppDryRunInfo`` made by hand, which has none (reading it raises)."""
    from torchx.specs.errors import SpecError

    try:
        cfg: Mapping[str, Any] = info.cfg
    except SpecError:
        return None
    return cfg


def save(
    state_dir: str,
    app: AppDef,
    *,
    dir_mode: int = 0o700,
    run_options: Mapping[str, Any] | None = None,
) -> None:
    """Writes ``app`` into ``state_dir`` (made with ``dir_mode`` if missing), into a file
    readable by the user only (0600, whatever the directory's mode).

    An AppDef holding other classes than torchx-specs' (a Role subclass of the user's
    code, say) is stored as the spec types the serializer writes for it.
    """
    from torchx.specs.appdef_json import encode

    text = encode(app, run_options=run_options)
    try:
        os.mkdir(state_dir, dir_mode)
        os.chmod(state_dir, dir_mode)  # the umask may have taken bits away
    except FileExistsError:  # made first by the job or by the scheduler's job directory code
        pass
    write_private_atomic(os.path.join(state_dir, FILE), text, fsync=False)


def load(state_dir: str) -> AppDef | None:
    """The AppDef :func:`save` wrote in ``state_dir``; None if there is none to trust."""
    return load_with_options(state_dir)[0]


def load_with_options(state_dir: str) -> tuple[AppDef | None, dict[str, Any]]:
    """The AppDef :func:`save` wrote in ``state_dir`` (None if there is none to trust) and
    the masked run options kept with it (empty if none)."""
    try:
        fd = os.open(os.path.join(state_dir, FILE), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None, {}
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            return None, {}
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read()
    finally:
        os.close(fd)
    from torchx.specs.appdef_json import decode_with_options

    try:
        return decode_with_options(data.decode("utf-8"))
    except ValueError:  # not UTF-8, not JSON, another format or kind: no AppDef
        return None, {}

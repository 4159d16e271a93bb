"""The submitted AppDef, kept with the job, so ``describe`` gives it back from any shell.

LSF keeps a job's name and project, not the AppDef. At submit the scheduler writes the
AppDef into the app's own directory ``JOBDIR/.torchx-lsf/<app id>/appdef.pickle``, a file
only the user can read (0600, in a 0700 directory): the roles' env may hold secrets,
which ``describe`` gives back whole (an AppDef ready to run again), as the local
scheduler does; the ``torchx`` command masks secret-looking values when it prints one.

Why a pickle and not the JSON document of ``torchx.specs.serialize``: that module
imports cattrs, whose import would be most of the cost of ``torchx run`` and of every
``torchx status`` (which reads this file). The pickle is read back safely:

* only from a regular file (never a link) that is the user's own and that nobody
  else can read or write (so no one else can have planted it);
* through an unpickler that resolves only torchx-specs' attrs classes and enums
  (calling them builds spec objects, nothing else), so even a crafted file runs no code.

>>> import tempfile
>>> from torchx.specs import AppDef, Role
>>> d = tempfile.mkdtemp()
>>> app = AppDef("echo", [Role("hello", image="/tmp", entrypoint="echo", env={"TOKEN": "s3"})])
>>> save(d, app)
>>> load(d) == app
True

The payload is ``{"apiVersion": API_VERSION, "kind": "LsfAppDef", "specs_version": ...,
"app": AppDef}``: a reader that finds another format gives no AppDef (describe then
has empty roles), never a wrong one.
"""

from __future__ import annotations

import enum
import io
import os
import pickle
import stat
from typing import Any

import attrs

from torchx.schedulers.files import write_private_atomic
from torchx.specs import AppDef

#: The file, in the app's directory, holding the submitted AppDef.
FILE = "appdef.pickle"
#: The format version of that file.
API_VERSION = "torchx-lsf/v1"
_KIND = "LsfAppDef"
# what a stored AppDef may refer to: torchx-specs' classes (and the builtins pickle uses)
_SPECS = "torchx.specs"


class _NotPlain(Exception):
    pass


def _is_spec_class(module: object, obj: object) -> bool:
    return (
        isinstance(module, str)
        and (module == _SPECS or module.startswith(_SPECS + "."))
        and isinstance(obj, type)
        and (attrs.has(obj) or issubclass(obj, enum.Enum))
    )


def _dumps_plain(payload: dict[str, Any]) -> bytes | None:
    """The pickle of ``payload`` if it refers to torchx-specs classes only, else None."""

    class Pickler(pickle.Pickler):
        def reducer_override(self, obj: Any) -> Any:
            if isinstance(obj, type):
                if not _is_spec_class(obj.__module__, obj):
                    raise _NotPlain(repr(obj))
            elif type(obj).__module__ != "builtins" and not _is_spec_class(
                type(obj).__module__, type(obj)
            ):
                raise _NotPlain(repr(obj)[:100])
            return NotImplemented

    buf = io.BytesIO()
    try:
        Pickler(buf, protocol=5).dump(payload)
    except (_NotPlain, pickle.PicklingError, TypeError, AttributeError):
        return None
    return buf.getvalue()


class _SpecsUnpickler(pickle.Unpickler):
    """Resolves torchx-specs' attrs classes and enums only: loading runs no other code."""

    def find_class(self, module: str, name: str) -> Any:
        obj = super().find_class(module, name) if module.startswith(_SPECS) else None
        if obj is None or not _is_spec_class(module, obj):
            raise pickle.UnpicklingError(f"{module}.{name} is not a torchx spec class")
        return obj


def save(state_dir: str, app: AppDef, *, dir_mode: int = 0o700) -> None:
    """Writes ``app`` into ``state_dir`` (made with ``dir_mode`` if missing), into a file
    readable by the user only (0600, whatever the directory's mode).

    An AppDef holding other classes than torchx-specs' (a Role subclass of the user's
    code, say) is stored as the spec types its JSON round trip gives.
    """
    from torchx.specs import __version__ as specs_version

    def payload(a: AppDef) -> dict[str, Any]:
        return {"apiVersion": API_VERSION, "kind": _KIND, "specs_version": specs_version, "app": a}

    blob = _dumps_plain(payload(app))
    if blob is None:
        from torchx.specs import serialize

        plain = serialize.from_document(serialize.to_document(app), AppDef)
        blob = pickle.dumps(payload(plain), protocol=5)
    try:
        os.mkdir(state_dir, dir_mode)
        os.chmod(state_dir, dir_mode)  # the umask may have taken bits away
    except FileExistsError:  # made by jobdir.make_app_dir, as it should be
        pass
    write_private_atomic(os.path.join(state_dir, FILE), blob, fsync=False)


def load(state_dir: str) -> AppDef | None:
    """The AppDef :func:`save` wrote in ``state_dir``; None if there is none to trust."""
    try:
        fd = os.open(os.path.join(state_dir, FILE), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            return None
        try:
            data = _SpecsUnpickler(f).load()
        except Exception:  # another format, a truncated or foreign file: no AppDef
            return None
    if (
        not isinstance(data, dict)
        or data.get("apiVersion") != API_VERSION
        or not isinstance(data.get("app"), AppDef)
    ):
        return None
    app: AppDef = data["app"]
    return app

"""The records a launch writes: the app's log directory, request, AppDef and first state.

``schedule`` (:mod:`torchx.schedulers.local.launch`) calls these in turn before it
starts the app's supervisor: :func:`make_log_dir` (fresh and private, even in a shared
directory), :func:`write_records` (``request.json``, ``appdef.pickle`` and the first
``state.json``, each private; see there why the AppDef's JSON document may be left to
the supervisor) and, for an app kept outside the default state directory,
:func:`write_link`, which lets its handle alone find it later.
"""

from __future__ import annotations

import os
import sys
import time
from typing import TYPE_CHECKING, Any

from torchx.schedulers.contract.errors import SchedulerError
from torchx.schedulers.local import state as _st

if TYPE_CHECKING:
    from torchx.schedulers.local.request import LocalRequest
    from torchx.specs import AppDef

# whether this process has left an AppDef's JSON record to a supervisor yet
_deferred_once = False


class _NotPlain(Exception):
    pass


def pickle_plain(obj: Any) -> bytes | None:
    """``pickle.dumps(obj)`` if it refers only to torchx-specs classes and builtins, else None.

    Such a pickle loads in any process that has torchx-specs (the supervisor, a later
    ``describe``); one naming a class of the user's code (maybe from a component file
    loaded by path) might not.
    """
    import io
    import pickle

    allowed = ("builtins", "copyreg", "torchx.specs")

    def plain(module: object) -> bool:
        return isinstance(module, str) and (module in allowed or module.startswith("torchx.specs."))

    class Pickler(pickle.Pickler):
        def reducer_override(self, o: Any) -> Any:
            # a class or function is pickled by its module's name; anything else by its type
            named = isinstance(o, type) or hasattr(o, "__qualname__")
            if not plain(getattr(o, "__module__", None) if named else type(o).__module__):
                raise _NotPlain(repr(o)[:100])
            return NotImplemented

    buf = io.BytesIO()
    try:
        Pickler(buf, protocol=5).dump(obj)
    except (_NotPlain, pickle.PicklingError, TypeError, AttributeError):
        return None
    return buf.getvalue()


def make_log_dir(log_dir: str, app_dir: str) -> bool:
    """Creates the app's log directory fresh and private; True if it was created here.

    ``<log_dir>/<app_id>`` may sit in a shared directory (``-cfg log_dir=/tmp/logs``).
    There it must be made by this process (``mkdir`` never follows a planted link and
    fails on a planted directory), in a directory that only its owner (us or root) can
    change entries of: another user could otherwise read the logs, or make the replicas
    append them to a file of their choosing. An existing one is accepted only if it is
    ours, private and a real directory.
    """
    import stat

    parent = os.path.dirname(log_dir)
    if not log_dir.startswith(app_dir + os.sep):
        try:
            os.makedirs(parent, mode=0o700, exist_ok=True)
        except OSError as e:
            raise SchedulerError(
                f"cannot create log_dir {parent}: {e.strerror or e}; give a writable directory"
            ) from None
        # as ssh does: every directory on the way must be one only we (or root) can change
        path = parent
        while True:
            st = os.lstat(path)
            bad = ""
            if stat.S_ISLNK(st.st_mode):
                bad = "is a symbolic link (it was not when the app was dry-run)"
            elif st.st_uid not in (os.geteuid(), 0):
                bad = f"is owned by uid {st.st_uid}, neither you nor root"
            elif st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
                bad = f"is writable by others and not sticky (mode {st.st_mode & 0o7777:04o})"
            if bad:
                raise SchedulerError(
                    f"log_dir {parent}: {path} {bad}, so another user could replace the "
                    "logs written there; use a directory of your own, e.g. "
                    "-cfg log_dir=~/torchx-logs"
                )
            if path == os.path.dirname(path):
                break
            path = os.path.dirname(path)
    try:
        os.mkdir(log_dir, 0o700)
        return True
    except FileExistsError:
        pass
    st = os.lstat(log_dir)
    if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o077:
        return False
    raise SchedulerError(
        f"log directory {log_dir} already exists and is not a private directory of yours "
        "(another user may have created it to read or redirect the logs): refusing to "
        "write there; remove it, or use a log_dir of your own"
    )


def write_link(app_id: str, state_dir: str) -> str:
    """Records in the default state directory where the app's records are.

    An app run elsewhere (the ``state_dir`` run option, or a scheduler created with
    another ``state_dir``) keeps its records there, yet its handle carries only the
    app id: the link lets any later process that uses the default state directory
    find it from the handle alone (and list it).
    """
    links = os.path.join(_st.default_state_dir(), "links")
    try:
        _st.ensure_private_dir(_st.default_state_dir())
        _st.ensure_private_dir(links)
    except _st.UnsafeDirError as e:
        raise SchedulerError(str(e)) from None
    path = os.path.join(links, f"{app_id}.json")
    _st.write_json_atomic(
        path,
        {"apiVersion": _st.API_VERSION, "kind": "LocalAppLink", "state_dir": state_dir},
    )
    return path


def write_records(
    app_dir: str, request: LocalRequest, app: AppDef, scheduler: str = "local"
) -> None:
    """Writes request.json, the AppDef cache (appdef.pickle) and the first state.json.

    ``scheduler`` is the name the app was submitted under (``local``, or its other name
    ``local_cwd``): state.json keeps it, so that ``list`` gives back the handle the user
    was given (see :func:`torchx.schedulers.local.records.submitted_as`).

    The AppDef's JSON document (the lasting record, read by any release) needs the
    serializer and json, whose imports are milliseconds of a first ``schedule``: of
    every ``torchx run``. So
    the first launch of a process whose AppDef holds only torchx-specs types and
    builtins writes the pickle (stdlib) alone, and its supervisor adds the JSON
    document to request.json later (a few seconds into the app, or at its end), off
    the launcher's clock. Later launches of the same process (the serializer is loaded once for all
    of them), and AppDefs with other classes (a Role subclass, say), get both written
    here from the serializer's round trip, which leaves only spec types.
    """
    global _deferred_once
    from torchx.specs import __version__ as specs_version

    now = time.time()
    body = request.to_json()
    body.update({"apiVersion": _st.API_VERSION, "kind": "LocalAppRequest"})
    blob = None
    if not _deferred_once and "torchx.specs.serialize" not in sys.modules:
        blob = pickle_plain({"specs_version": specs_version, "app": app})
        _deferred_once = blob is not None
    if blob is None:
        import pickle

        from torchx.specs import AppDef, serialize

        doc = serialize.to_document(app)
        body["app"] = doc
        plain = serialize.from_document(doc, AppDef)
        blob = pickle.dumps({"specs_version": specs_version, "app": plain}, protocol=5)
    _st.write_json_atomic(os.path.join(app_dir, "request.json"), body)
    fd = os.open(
        os.path.join(app_dir, "appdef.pickle"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600
    )
    with os.fdopen(fd, "wb") as f:
        f.write(blob)
    _st.write_json_atomic(
        os.path.join(app_dir, "state.json"),
        {
            "apiVersion": _st.API_VERSION,
            "kind": "LocalAppState",
            "app_id": request.app_id,
            "app_name": request.app_name,
            "scheduler": scheduler,
            "state": "SUBMITTED",
            "msg": "",
            "num_restarts": 0,
            "created": now,
            "updated": now,
            "log_dir": request.log_dir,
            "cancel_requested": False,
            "supervisor": None,
            "replicas": {
                r.name: [
                    {
                        "id": rep.id,
                        "state": "PENDING",
                        "exit_code": None,
                        "log_dir": rep.log_dir,
                    }
                    for rep in r.replicas
                ]
                for r in request.roles
            },
        },
    )

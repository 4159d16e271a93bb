"""Quick handlers: how a scheduler plugin lets ``torchx status|log|cancel`` of its apps start fast.

Before any work, a ``torchx`` command pays for the interpreter, attrs (every spec type),
pluggy and the plugin registry, argparse and a Runner: some 50 ms. Against a backend
that answers in 10 ms (``squeue``) that is most of the command. A plugin may register a
*quick handler* for its scheduler (the ``torchx_quick_handlers`` hook, ``{scheduler
name: "module:attr"}``); ``torchx status``, ``log`` and ``cancel`` of that scheduler's
apps then ask it first, with none of the above loaded.

The contract (this module imports nothing, so a handler can import it for free):

* **Not a second implementation.** A handler is the scheduler's own pure status parser
  (backend answer to the status record of :mod:`torchx.specs.status`, the function the
  scheduler's ``describe`` makes its ``DescribeAppResponse`` from) applied to the
  answer of the same backend call ``describe`` makes, plus a **declaration** of which
  commands it may answer without the Runner: :attr:`QuickHandler.calls`, any of
  :data:`CALLS` (``"status"``, ``"log"``: the replica's log read as ``log_iter`` reads
  it; ``"cancel"``: of an app its status says has ended). What it adds of its own is
  only the declining. So put the parsing in a light module of the plugin (Slurm's is
  ``torchx_slurm.status_record``) that both import; never rewrite it for the handler.
* **Light.** The handler's module imports the standard library and the plugin's own
  light modules only: never attrs, ``torchx.schedulers.contract.api`` or an SDK, and of
  ``torchx.specs`` only the standard-library core :mod:`torchx.specs.status` (for
  types). Importing more would cost what the quick path exists to save.
* **Exact, or decline.** Each method answers exactly what the scheduler's full path
  would (``describe``, ``log_iter``), or declines: it returns None, or raises anything.
  Declining is always correct: the full command runs and prints what it prints, errors
  included. So decline on any doubt: the backend failed or timed out (the full path
  retries and reports it), the backend does not know the app, a state the handler does
  not map with certainty, a record it cannot read, a FAILED app (the full path looks
  for the failed replica's error).
* **No side effect** before it answers: declining after a change would have the full
  command act again.
* **Data, not text.** The handler returns plain values; the command formats them with
  the code of the full path, so the output is the same byte for byte.

What the ``torchx`` command does with it: ``status HANDLE`` prints the
``QuickStatus`` (one whose text holds a secret-looking value of its ``envs``, which
the full path would mask, goes the full way unless ``--show-secrets``); ``log HANDLE[/ROLE[/N,M]]`` (with ``--streams``, ``--color``)
prints what :meth:`QuickHandler.log` gives for each replica chosen; ``cancel HANDLE`` of
an app that has ended says so (the cancel of a live app is the full command's). Any
other option, and any command error, goes the full way. The command uses a handler only
after a full run in the same Python environment found it to come from the same
distribution as the scheduler of that name, the commands to be torchx-cli's own, and no
plugin failing to load; that finding is forgotten when anything is installed, upgraded
or removed, a ``TORCHX_*`` variable changes or a plugin module's file changes
(``TORCHX_NO_PLUGIN_CACHE=1`` turns the quick path off).

A plugin tests its handler against its scheduler: for the same backend answer,
:meth:`QuickHandler.status` must equal :func:`quick_status_of` of the scheduler's
``describe`` (or be None), and the handler's log lines the scheduler's.

What every handler needs besides its parser, written once here (each imports what it
needs when called, so importing this module stays free): :func:`which` (a tool on
``PATH``), :func:`timeout_from_env` (its command's timeout, as the scheduler reads it)
and :func:`kept_envs` (the env of each role of the AppDef kept in an app's directory).
Each raises :class:`Decline` where the full path should answer.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs milliseconds, which this module exists to save
if TYPE_CHECKING:
    from collections.abc import Collection, Iterable
    from typing import Any, Protocol

    from torchx.specs.status import ReplicaRecord, StatusRecord

    #: A replica: (replica id, AppState name, exit code or None, hostname or "").
    QuickReplica = ReplicaRecord
    #: What a handler's ``status`` answers: the plain status record of
    #: :mod:`torchx.specs.status` (the one ``torchx status`` prints), with ``envs``: the
    #: env of each role of the AppDef ``describe`` gives (``roles``), empty without
    #: roles. ``torchx status`` masks their secret-looking values, so a status whose
    #: text holds one goes the full way. Every role's env, or decline: a superset is
    #: fine (at worst the full path answers), a subset is not.
    QuickStatus = StatusRecord

    class QuickHandler(Protocol):
        """What a quick handler provides (an object, often a module-level instance)."""

        #: The commands the ``torchx`` command may answer through it, without the
        #: Runner: any of :data:`CALLS`. Others go the full way.
        calls: Collection[str]

        def status(self, app_id: str) -> QuickStatus | None:
            """The app's status as the scheduler's ``describe`` gives it; None declines."""
            ...

        def log(
            self, app_id: str, role: str, k: int, streams: str | None, status: QuickStatus
        ) -> Iterable[str] | None:
            """Replica ``k`` of ``role``'s log, as the scheduler's ``log_iter`` with
            ``streams`` ("stdout", "stderr", "combined" or None) and no other option
            gives it; ``status`` is what :meth:`status` just answered. None declines."""
            ...


# QuickHandler and QuickStatus are for type checkers: import them under TYPE_CHECKING
__all__ = [
    "CALLS",
    "Decline",
    "declared_calls",
    "handler_problem",
    "kept_envs",
    "quick_status_of",
    "timeout_from_env",
    "which",
]

#: What a handler may declare in its ``calls``.
CALLS = ("status", "log", "cancel")


def declared_calls(handler: Any) -> tuple[str, ...]:
    """The commands ``handler`` declares it answers (its ``calls``); none when it declares
    none, or declares them in a form other than a tuple, list or set of names."""
    calls = getattr(handler, "calls", None)
    if not isinstance(calls, (tuple, list, frozenset, set)):
        return ()
    return tuple(c for c in calls if isinstance(c, str))


def handler_problem(handler: Any) -> str:
    """How ``handler`` breaks the contract, or ``""`` (what ``torchx plugins --check`` says).

    It must declare ``calls`` (some of :data:`CALLS`) and have ``status``, and ``log``
    when it declares ``"log"``.
    """
    calls = declared_calls(handler)
    declared = bool(calls)
    missing = [
        name
        for name in ("status", "log")
        if (name == "status" or not declared or name in calls)
        and not callable(getattr(handler, name, None))
    ]
    if not declared:
        missing.append("calls")
    if missing:
        return f"a quick handler without {', '.join(missing)}"
    unknown = sorted(set(calls) - set(CALLS))
    if unknown:
        return f"a quick handler declaring {', '.join(map(repr, unknown))}; calls are {', '.join(CALLS)}"
    return ""


def quick_status_of(desc: Any, envs: list[dict[str, str]] | None = None) -> QuickStatus:
    """The ``QuickStatus`` of a scheduler's ``DescribeAppResponse`` (for tests).

    ``envs`` defaults to the env of each of ``desc.roles``. A plugin's tests compare
    this with what its handler answers for the same backend state.
    """
    record: QuickStatus = desc.app_status().record()
    record["envs"] = [dict(role.env) for role in desc.roles] if envs is None else envs
    return record


class Decline(Exception):
    """Not the plain case: the full command answers (a handler returns None for it)."""


def which(tool: str) -> str | None:
    """``shutil.which(tool)`` for a bare name on POSIX, without importing shutil (and with
    it bz2, lzma, fnmatch: milliseconds); a test checks they agree."""
    import os

    path = os.environ.get("PATH", None)
    if path is None:
        try:
            path = os.confstr("CS_PATH")
        except (AttributeError, ValueError):
            path = os.defpath
    if not path:
        return None
    seen = set()
    for folder in os.fsdecode(path).split(os.pathsep):
        norm = os.path.normcase(folder)
        if norm in seen:
            continue
        seen.add(norm)
        name = os.path.join(folder, tool)
        if os.path.exists(name) and os.access(name, os.F_OK | os.X_OK) and not os.path.isdir(name):
            return name
    return None


def timeout_from_env(name: str, default: float, maximum: float) -> float:
    """The timeout the environment variable ``name`` sets (``default`` when unset), as the
    scheduler's commands read it; :class:`Decline` for a value they would refuse (the
    full command says what is wrong)."""
    import os

    raw = os.environ.get(name, "")
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise Decline(name) from None
    if not 0 < value <= maximum:
        raise Decline(name)
    return value


#: As ``torchx.schedulers.helpers.appstore`` and ``torchx.specs.appdef_json`` (a test checks).
APPDEF_FILE = "appdef.json"
APPDEF_VERSION = "torchx.specs/v1"


def kept_envs(state_dir: str) -> list[dict[str, str]]:
    """The env of each role of the AppDef kept in ``state_dir``
    (:mod:`torchx.schedulers.helpers.appstore`), for ``QuickStatus["envs"]``.

    None of it where ``appstore.load`` would give no AppDef for reasons this can tell (no
    directory, no file, not the user's own private file). The command uses these values
    only to see whether a secret would be masked in what it prints, and leaves any such
    status to the full path; so a file ``appstore.load`` would still refuse costs nothing.
    :class:`Decline` when it cannot read every role's env.
    """
    if not state_dir:
        return []
    import os
    import stat

    try:
        fd = os.open(
            os.path.join(state_dir, APPDEF_FILE), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
        )
    except OSError:
        return []
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            return []
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read()
    finally:
        os.close(fd)
    import json

    try:
        doc = json.loads(data.decode("utf-8"))
    except ValueError:
        raise Decline("the kept AppDef") from None
    spec = doc.get("spec") if type(doc) is dict else None
    roles = spec.get("roles") if type(spec) is dict else None
    if (
        doc.get("apiVersion") != APPDEF_VERSION
        or doc.get("kind") != "AppDef"
        or type(roles) is not list
    ):
        raise Decline("the kept AppDef's format")
    envs = []
    for role in roles:
        env = role.get("env") if type(role) is dict else None
        if type(env) is not dict or not all(
            type(k) is str and type(v) is str for k, v in env.items()
        ):
            raise Decline("a role's env")
        envs.append(dict(env))
    return envs

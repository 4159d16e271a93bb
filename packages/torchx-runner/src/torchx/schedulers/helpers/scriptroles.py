"""Checks of an AppDef whose replicas run from a generated shell script (Slurm, LSF, ...).

A scheduler that writes a bash script per job (or per replica) and names the backend's
jobs and files after the app's roles refuses the same AppDefs, for the same reasons,
before anything is submitted: a name the backend's job names and file names cannot
hold, two roles of one name, a role without replicas or without an entrypoint, an
``env`` name that no shell variable can have or that the script itself sets or bash
keeps (:data:`BASH_READONLY`), a NUL character in an argument or value (no program can
receive one). Each refusal is one line naming the role and what would do, raised as the
scheduler's own error class (``error``, a :class:`~torchx.specs.errors.SpecError` by
default); the backend's words are parameters.

One of them is every scheduler's, and the Runner's: :func:`require_roles`, the refusal
of an app without roles, worded once.

>>> from torchx.specs import AppDef, Role
>>> check_roles(AppDef("a", [Role("t", image="/", entrypoint="sh")]), names="Acme jobs")
>>> check_roles(AppDef("a", [Role("t", image="/", entrypoint="sh", env={"UID": "0"})]),
...             names="Acme jobs")
Traceback (most recent call last):
...
torchx.specs.errors.SpecError: role 't': env name 'UID' is one bash keeps for itself, so the job script cannot pass it on: give the variable another name
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from torchx.specs.api import AppDef, Role
from torchx.specs.errors import SpecError

#: What makes the exception a refusal raises: the scheduler's error class.
ErrorType = Callable[[str], Exception]

__all__ = [
    "BASH_READONLY",
    "NAME",
    "ErrorType",
    "check_name",
    "check_role",
    "check_roles",
    "require_roles",
]

#: A name the backends' job and file names hold: letters, digits, ``_``, ``.``, ``-``
#: (not first).
NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")
_ENV_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: Variables bash keeps for itself (read-only or its own): a script cannot export them.
BASH_READONLY = frozenset({"BASHOPTS", "BASH_VERSINFO", "EUID", "PPID", "SHELLOPTS", "UID"})
_BASH_WHY = "is one bash keeps for itself, so the job script cannot pass it on"


def check_name(
    kind: str,
    name: str,
    where: str = "",
    *,
    names: str,
    max_len: int = 200,
    error: ErrorType = SpecError,
) -> str:
    """``name`` if it can name the backend's ``names`` (e.g. ``"LSF jobs and files"``).

    >>> check_name("role", "trainer", names="Acme jobs")
    'trainer'
    """
    if not NAME.fullmatch(name) or len(name) > max_len:
        raise error(
            f"{kind} name {name!r}{where} cannot name {names}: use letters, digits, '_', "
            f"'.' and '-' (not first), at most {max_len}, e.g. 'trainer'"
        )
    return name


def check_role(
    app: AppDef,
    role: Role,
    *,
    names: str,
    max_len: int = 200,
    reserved: Mapping[str, str] | None = None,
    error: ErrorType = SpecError,
) -> None:
    """Refuses ``role`` of ``app`` in one line if a generated script cannot run it.

    ``reserved`` maps the ``env`` names the script sets itself to why (default: bash's
    own, :data:`BASH_READONLY`); give it to add the scheduler's (merged with bash's).
    """
    check_name("role", role.name, f" (app {app.name!r})", names=names, max_len=max_len, error=error)
    if role.num_replicas < 1:
        raise error(f"role {role.name!r} has num_replicas={role.num_replicas}: it needs at least 1")
    if role.entrypoint in ("", "<MISSING>"):
        raise error(
            f"role {role.name!r} has no entrypoint: set Role.entrypoint to the program to run"
        )
    taken = {key: _BASH_WHY for key in BASH_READONLY} | dict(reserved or {})
    for key in role.env:
        if not _ENV_KEY.fullmatch(key):
            raise error(
                f"role {role.name!r}: env name {key!r} is not a valid variable name "
                "(letters, digits and '_', not starting with a digit)"
            )
        if key in taken:
            raise error(
                f"role {role.name!r}: env name {key!r} {taken[key]}: give the variable another name"
            )
    for text in (role.entrypoint, *role.args, *role.env.values()):
        if "\x00" in text:
            raise error(
                f"role {role.name!r}: an argument or env value holds a NUL character, "
                "which no program can receive"
            )


def require_roles(app: AppDef, *, error: ErrorType = SpecError) -> None:
    """Refuses an app without roles: nothing could run.

    >>> require_roles(AppDef("a", []))
    Traceback (most recent call last):
    ...
    torchx.specs.errors.SpecError: app 'a' has no roles: give it at least one Role
    """
    if not app.roles:
        raise error(f"app {app.name!r} has no roles: give it at least one Role")


def check_roles(
    app: AppDef,
    *,
    names: str,
    max_len: int = 200,
    reserved: Mapping[str, str] | None = None,
    error: ErrorType = SpecError,
) -> None:
    """:func:`check_role` of every role, and at least one role, each name once."""
    require_roles(app, error=error)
    seen: set[str] = set()
    for role in app.roles:
        check_role(app, role, names=names, max_len=max_len, reserved=reserved, error=error)
        if role.name in seen:
            raise error(
                f"app {app.name!r} has two roles named {role.name!r}: give each role its own name"
            )
        seen.add(role.name)

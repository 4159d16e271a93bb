"""What the local scheduler refuses at dryrun, before anything is written or started.

Each of these used to be accepted, given a handle, and then fail inside the
supervisor (or worse, run wrongly): an environment key holding ``=``, a NUL in an
argument or env value (``execve`` cannot pass it), two roles with the same name (both
wrote the same log files), an image that is not a directory (silently replaced by
the launch directory), a negative ``max_retries``, an argument that is not a string.
:func:`check_app` turns each into one line naming the role, the field and what
would be right, raised as :class:`~torchx.specs.SpecError` from ``submit_dryrun``.
"""

from __future__ import annotations

import os

from torchx.schedulers.local.state import is_valid_role_name
from torchx.specs import AppDef, Role, SpecError


def check_app(app: AppDef, check_images: bool = True) -> None:
    """Raises :class:`SpecError` (one line) for the first thing in ``app`` local cannot run.

    ``check_images`` False leaves the images to an image provider (see
    :mod:`torchx.schedulers.local.images`): it may ignore them, or fetch them.
    """
    seen: set[str] = set()
    for role in app.roles:
        if not is_valid_role_name(role.name):
            raise SpecError(
                f"role name {role.name!r} cannot be used by the local scheduler: use "
                "letters, digits, '_', '.' and '-' (it names the log directory)"
            )
        if role.name in seen:
            raise SpecError(
                f"app {app.name!r} has two roles named {role.name!r}: role names must be "
                "unique (each names its own log directory); rename one of them"
            )
        seen.add(role.name)
        _check_role(role, check_images)


def _check_role(role: Role, check_image: bool = True) -> None:
    where = f"role {role.name!r}"
    if not isinstance(role.num_replicas, int) or role.num_replicas < 1:
        raise SpecError(f"{where}: num_replicas={role.num_replicas!r}: it must be at least 1")
    if isinstance(role.max_retries, bool) or not isinstance(role.max_retries, int):
        raise SpecError(
            f"{where}: max_retries={role.max_retries!r} ({type(role.max_retries).__name__}): "
            "it must be a whole number >= 0"
        )
    if role.max_retries < 0:
        raise SpecError(
            f"{where}: max_retries={role.max_retries}: it must be >= 0 (0: never restart)"
        )
    _check_text(where, "entrypoint", role.entrypoint)
    if not role.entrypoint:
        raise SpecError(f"{where}: the entrypoint is empty: name the command to run")
    if not isinstance(role.args, list | tuple):
        raise SpecError(
            f"{where}: args is a {type(role.args).__name__}, not a list of strings: "
            "pass args=['--flag', 'value']"
        )
    for i, arg in enumerate(role.args):
        _check_text(where, f"argument {i}", arg)
    if not isinstance(role.env, dict):
        raise SpecError(
            f"{where}: env is a {type(role.env).__name__}, not a mapping of strings to strings"
        )
    for key, value in role.env.items():
        _check_text(where, "an env key", key)
        if not key or "=" in key:
            raise SpecError(
                f"{where}: env key {key!r} "
                + ("is empty" if not key else "contains '='")
                + ": an environment variable name is non-empty and has no '=' "
                "(the value goes after the first '=' of KEY=VALUE)"
            )
        _check_text(where, f"the value of env {key!r}", value)
    image = role.image
    if not isinstance(image, str):
        raise SpecError(f"{where}: image {image!r} is not a string: give a directory")
    if check_image and image and not os.path.isdir(image):
        what = "is a file" if os.path.exists(image) else "does not exist"
        raise SpecError(
            f"{where}: image {image!r} {what}: the local scheduler runs each replica in "
            "its image directory; give an existing directory (e.g. '.', the launch "
            "directory)"
        )


def _check_text(where: str, what: str, value: object) -> None:
    if not isinstance(value, str):
        raise SpecError(
            f"{where}: {what} is {value!r} ({type(value).__name__}), not a string: "
            f"pass it as a string (e.g. {str(value)!r})"
        )
    if "\0" in value:
        raise SpecError(
            f"{where}: {what} ({value!r}) contains a NUL character, which no process "
            "argument or environment can hold: remove it"
        )

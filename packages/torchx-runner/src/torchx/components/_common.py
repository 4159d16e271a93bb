"""Helpers shared by the built-in components (private: not part of the API)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from torchx.components.errors import ComponentArgError

if TYPE_CHECKING:
    from torchx.specs.api import Mount


def parse_mount_opts(mounts: list[str] | None) -> list[Mount]:
    """``--mounts`` strings to typed mounts (torchx.specs.mounts loads only when given)."""
    if not mounts:
        return []
    from torchx.specs.mounts import parse_mounts

    return list(parse_mounts(mounts))


def check_script(script: str, image: str, option: str) -> None:
    """When the image is a local directory, the script must be a file in it.

    Container images cannot be looked into, and a script holding a macro or a
    variable (``$``) is only known at run time: those are not checked.
    """
    if "$" in script or not script or not os.path.isdir(image):
        return
    path = os.path.join(image, script)
    if os.path.isfile(path):
        return
    where = (
        "the launch directory"
        if os.path.normpath(image) == "."
        else f"the image directory {image!r}"
    )
    state = "is a directory" if os.path.isdir(path) else "does not exist"
    raise ComponentArgError(
        f"{option} {script!r} {state} in {where} ({os.path.abspath(path)}); "
        "give the path of a Python file relative to it, or -m for a module"
    )

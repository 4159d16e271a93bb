"""Core TorchX types for defining distributed applications.

The main types are :class:`AppDef`, :class:`Role` and :class:`Resource`.
Components are functions that return an AppDef, which a scheduler then launches.

>>> import torchx.specs as specs
>>> app = specs.AppDef(
...     name="echo",
...     roles=[specs.Role(name="worker", image="/tmp", entrypoint="/bin/echo", args=["hello"])],
... )
>>> app.name
'echo'

Names are loaded on first use (PEP 562): ``import torchx.specs`` costs almost
nothing, and ``from torchx.specs import AppDef`` loads the core types (attrs and
nothing heavier). Heavier parts are their own modules, imported when used:
``torchx.specs.serialize`` (cattrs), ``torchx.specs.overlays``,
``torchx.specs.file_linter``, ``torchx.specs.builders`` (a component's command
line to its AppDef; ``materialize_appdef`` is also here, loaded on use) and
``torchx.specs.plugins`` (pluggy, entry points).
"""

from __future__ import annotations

from torchx.specs._version import __version__

# typing is not imported at run time: importing this package must stay near free
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from torchx.specs.api import (
        ALL,
        FRACTIONAL_TAG,
        MISSING,
        NAMED_RESOURCE_TAG,
        NONE,
        NULL_RESOURCE,
        AppDef,
        AppDryRunInfo,
        AppState,
        AppStatus,
        Mount,
        ReplicaState,
        ReplicaStatus,
        Resource,
        RetryPolicy,
        Role,
        RoleStatus,
        is_started,
        is_terminal,
    )
    from torchx.specs.builders import materialize_appdef
    from torchx.specs.errors import (
        AppStatusError,
        InvalidMountException,
        InvalidResourceException,
        InvalidRunConfigException,
        InvalidWorkspaceException,
        MalformedAppHandleException,
        SpecError,
        UnknownAppError,
        UnknownAppException,
        UnknownNamedResourceException,
        UnknownSchedulerError,
        UnknownSchedulerException,
    )
    from torchx.specs.handles import (
        AppHandle,
        ParsedAppHandle,
        make_app_handle,
        parse_app_handle,
    )
    from torchx.specs.mounts import (
        BindMount,
        DeviceMount,
        MountType,
        VolumeMount,
        parse_mounts,
    )
    from torchx.specs.options import (
        CfgVal,
        get_type_name,
        runopt,
        runopts,
    )
    from torchx.specs.resources import (
        GiB,
        get_named_resources,
        named_resources,
        powers_of_two_gpus,
        register,
        resource,
    )
    from torchx.specs.structured_opts import (
        StructuredOpts,
    )
    from torchx.specs.templating import (
        macros,
    )
    from torchx.specs.workspace import (
        Workspace,
    )

# name -> module that defines it; each is imported on first access
_LAZY: dict[str, str] = {
    "ALL": "torchx.specs.api",
    "FRACTIONAL_TAG": "torchx.specs.api",
    "MISSING": "torchx.specs.api",
    "NAMED_RESOURCE_TAG": "torchx.specs.api",
    "NONE": "torchx.specs.api",
    "NULL_RESOURCE": "torchx.specs.api",
    "AppDef": "torchx.specs.api",
    "AppDryRunInfo": "torchx.specs.api",
    "AppState": "torchx.specs.api",
    "AppStatus": "torchx.specs.api",
    "Mount": "torchx.specs.api",
    "ReplicaState": "torchx.specs.api",
    "ReplicaStatus": "torchx.specs.api",
    "Resource": "torchx.specs.api",
    "RetryPolicy": "torchx.specs.api",
    "Role": "torchx.specs.api",
    "RoleStatus": "torchx.specs.api",
    "is_started": "torchx.specs.api",
    "is_terminal": "torchx.specs.api",
    "AppStatusError": "torchx.specs.errors",
    "InvalidMountException": "torchx.specs.errors",
    "InvalidResourceException": "torchx.specs.errors",
    "InvalidRunConfigException": "torchx.specs.errors",
    "InvalidWorkspaceException": "torchx.specs.errors",
    "MalformedAppHandleException": "torchx.specs.errors",
    "SpecError": "torchx.specs.errors",
    "UnknownNamedResourceException": "torchx.specs.errors",
    "UnknownAppError": "torchx.specs.errors",
    "UnknownAppException": "torchx.specs.errors",
    "UnknownSchedulerError": "torchx.specs.errors",
    "UnknownSchedulerException": "torchx.specs.errors",
    "materialize_appdef": "torchx.specs.builders",
    "get_type_name": "torchx.specs.options",
    "AppHandle": "torchx.specs.handles",
    "ParsedAppHandle": "torchx.specs.handles",
    "make_app_handle": "torchx.specs.handles",
    "parse_app_handle": "torchx.specs.handles",
    "macros": "torchx.specs.templating",
    "BindMount": "torchx.specs.mounts",
    "DeviceMount": "torchx.specs.mounts",
    "MountType": "torchx.specs.mounts",
    "VolumeMount": "torchx.specs.mounts",
    "parse_mounts": "torchx.specs.mounts",
    "GiB": "torchx.specs.resources",
    "get_named_resources": "torchx.specs.resources",
    "named_resources": "torchx.specs.resources",
    "powers_of_two_gpus": "torchx.specs.resources",
    "register": "torchx.specs.resources",
    "resource": "torchx.specs.resources",
    "CfgVal": "torchx.specs.options",
    "runopt": "torchx.specs.options",
    "runopts": "torchx.specs.options",
    "StructuredOpts": "torchx.specs.structured_opts",
    "Workspace": "torchx.specs.workspace",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'torchx.specs' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "ALL",
    "FRACTIONAL_TAG",
    "MISSING",
    "NAMED_RESOURCE_TAG",
    "NONE",
    "NULL_RESOURCE",
    "AppDef",
    "AppDryRunInfo",
    "AppHandle",
    "AppState",
    "AppStatus",
    "AppStatusError",
    "BindMount",
    "CfgVal",
    "DeviceMount",
    "GiB",
    "InvalidMountException",
    "InvalidResourceException",
    "InvalidRunConfigException",
    "InvalidWorkspaceException",
    "MalformedAppHandleException",
    "Mount",
    "MountType",
    "ParsedAppHandle",
    "ReplicaState",
    "ReplicaStatus",
    "Resource",
    "RetryPolicy",
    "Role",
    "RoleStatus",
    "SpecError",
    "StructuredOpts",
    "UnknownAppError",
    "UnknownAppException",
    "UnknownNamedResourceException",
    "UnknownSchedulerError",
    "UnknownSchedulerException",
    "VolumeMount",
    "Workspace",
    "__version__",
    "get_named_resources",
    "get_type_name",
    "is_started",
    "is_terminal",
    "macros",
    "make_app_handle",
    "materialize_appdef",
    "named_resources",
    "parse_app_handle",
    "parse_mounts",
    "powers_of_two_gpus",
    "register",
    "resource",
    "runopt",
    "runopts",
]

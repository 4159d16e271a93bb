"""Finding a component by name: built-ins, plugins, ``file.py:fn`` and ``module:fn``.

``torchx run NAME ...`` accepts three kinds of names, tried in this order:

1. ``path/to/file.py:function``: a function in a Python file, loaded from its
   path (the file need not be importable; its directory is on ``sys.path``
   only while it loads, so it may import its neighbours);
2. ``package.module:function``: a function in an importable module;
3. a registered name such as ``dist.ddp`` or ``utils.echo``: the built-in
   groups and whatever installed plugins contribute through the
   ``torchx_components`` hook or upstream's ``torchx.components`` entry points
   (see :mod:`torchx.specs.plugins`).

>>> from torchx.components.finder import get_component
>>> ddp = get_component("dist.ddp")
>>> ddp.fn.__module__, ddp.fn_name
('torchx.components.dist', 'ddp')
>>> ddp.description.split(",")[0]
'Distributed data parallel style application (one role'
>>> get_component("dist.dpp")
Traceback (most recent call last):
 ...
torchx.specs.errors.ComponentNotFoundError: unknown component 'dist.dpp' (did you mean 'dist.ddp'?); `torchx builtins` lists the installed ones; a function elsewhere is named path/to/file.py:function or package.module:function

:func:`list_components` gives every registered component (what ``torchx
builtins`` shows): the public functions of the registered groups and modules
that are annotated to return an AppDef.
"""

from __future__ import annotations

import inspect
import os
import sys
import threading
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final

import attrs

from torchx.components.errors import ComponentLoadError, ComponentNotFoundError

if TYPE_CHECKING:
    from torchx.specs.api import AppDef
    from torchx.specs.file_linter import LinterMessage
    from torchx.specs.plugins import Registry

__all__ = ["ComponentDef", "get_component", "list_components"]

_SEE_ALSO: Final = (
    "`torchx builtins` lists the installed ones; a function elsewhere is named "
    "path/to/file.py:function or package.module:function"
)


@attrs.frozen
class ComponentDef:
    """A component found by :func:`get_component`.

    Args:
        name: the name it was asked for (``dist.ddp``, ``my/file.py:train``, ``pkg.mod:train``)
        fn: the component function
        description: the first paragraph of its docstring (empty without one)
        fn_name: the function's name
        module: the name of the module defining it (a generated name for files)
        path: the Python file defining it, when known
        source: where it comes from: the plugin distribution (``torchx-runner 0.1.0``),
            ``file`` or ``module``
    """

    name: str
    fn: Callable[..., AppDef] = attrs.field(eq=False, repr=False)
    description: str
    fn_name: str
    module: str | None = None
    path: str | None = None
    source: str = ""

    def validate(self) -> list[LinterMessage]:
        """Checks the component with :func:`torchx.specs.file_linter.validate` (without running it).

        Returns the linter's findings; empty when the component is fine or its
        source file is unknown.
        """
        if not self.path:
            return []
        from torchx.specs.file_linter import validate

        return validate(self.path, self.fn_name)


def _first_paragraph(fn: Callable[..., Any]) -> str:
    doc = inspect.getdoc(fn) or ""
    lines: list[str] = []
    for line in doc.splitlines():
        text = line.strip()
        if not text:
            if lines:
                break
            continue
        if text.endswith(":") and text[:-1].strip().lower() in ("args", "arguments", "returns"):
            break
        lines.append(text)
    return " ".join(lines)


def _make_def(
    name: str, fn: Callable[..., Any], source: str, path: str | None = None
) -> ComponentDef:
    module = getattr(fn, "__module__", None)
    if path is None and module is not None:
        path = getattr(sys.modules.get(module), "__file__", None)
    return ComponentDef(
        name=name,
        fn=fn,
        description=_first_paragraph(fn),
        fn_name=getattr(fn, "__name__", name),
        module=module,
        path=path,
        source=source,
    )


def _public_functions(module: ModuleType) -> list[str]:
    return sorted(
        n
        for n, obj in vars(module).items()
        if not n.startswith("_") and inspect.isfunction(obj) and obj.__module__ == module.__name__
    )


def _returns_appdef(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` is annotated ``-> AppDef`` (in any spelling, or a subclass)."""
    ann = getattr(fn, "__annotations__", {}).get("return", None)
    if isinstance(ann, str):
        return ann.strip().strip("'\"").rpartition(".")[2] == "AppDef"
    if isinstance(ann, type):
        from torchx.specs.api import AppDef

        return issubclass(ann, AppDef)
    return False


def _one_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    detail = lines[0] if lines else ""
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__


# ----------------------------------------------------------------- file:function


def _looks_like_path(target: str) -> bool:
    return (
        target.endswith(".py") or "/" in target or os.sep in target or target.startswith(("~", "."))
    )


_FILE_LOCK: Final = threading.Lock()
_FILE_MODULES: dict[str, tuple[tuple[int, int], ModuleType]] = {}


def _load_file(path: str, shown: str) -> ModuleType:
    """Imports the Python file at ``path`` (absolute) once per version of its content."""
    st = os.stat(path)
    stamp = (st.st_mtime_ns, st.st_size)
    with _FILE_LOCK:
        cached = _FILE_MODULES.get(path)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        import importlib.util

        base = "".join(c if c.isalnum() else "_" for c in os.path.basename(path)[:-3] or "file")
        mod_name = f"torchx_component_file_{abs(hash(path)):x}_{base}"
        spec = importlib.util.spec_from_file_location(mod_name, path)
        if spec is None or spec.loader is None:
            raise ComponentLoadError(f"cannot load component file {shown!r}: not a Python file")
        module = importlib.util.module_from_spec(spec)
        directory = os.path.dirname(path)
        sys.modules[mod_name] = module  # dataclasses, pickle and friends look modules up there
        sys.path.insert(0, directory)  # so the file may import its neighbours while it loads
        try:
            # compiled here rather than by the loader: loading a component (for a dryrun
            # too) leaves nothing on disk, not even a __pycache__ beside the user's file
            with open(path, "rb") as f:
                source = f.read()
            exec(compile(source, path, "exec", dont_inherit=True), vars(module))
        except (Exception, SystemExit) as e:
            sys.modules.pop(mod_name, None)
            raise ComponentLoadError(f"cannot load component file {shown!r}: {_one_line(e)}") from e
        finally:
            try:
                sys.path.remove(directory)
            except ValueError:
                pass
        _FILE_MODULES[path] = (stamp, module)
        return module


def _from_file(name: str, target: str, fn_name: str) -> ComponentDef:
    from torchx.specs.errors import did_you_mean

    path = os.path.abspath(os.path.expanduser(target))
    if not os.path.isfile(path):
        state = "is a directory" if os.path.isdir(path) else "does not exist"
        raise ComponentNotFoundError(
            f"component file {target!r} {state} ({path}); expected path/to/file.py:function"
        )
    module = _load_file(path, target)
    fn = vars(module).get(fn_name) if fn_name else None
    if fn is None or not callable(fn) or isinstance(fn, type):
        functions = _public_functions(module)
        what = f"function {fn_name!r}" if fn_name else "a function name after ':'"
        raise ComponentNotFoundError(
            f"{what} not found in {target!r}{did_you_mean(fn_name, functions) if fn_name else ''}"
            f"; functions defined there: {', '.join(functions) or 'none'}"
        )
    return _make_def(name, fn, source="file", path=path)


# --------------------------------------------------------------- module:function


def _dotted(text: str) -> bool:
    return bool(text) and all(part.isidentifier() for part in text.split("."))


def _from_module(name: str, target: str, fn_name: str) -> ComponentDef:
    import importlib

    from torchx.specs.errors import did_you_mean

    try:
        module = importlib.import_module(target)
    except ModuleNotFoundError as e:
        missing = e.name or ""
        if missing == target or target.startswith(missing + "."):
            raise ComponentNotFoundError(
                f"no module {missing!r} for component {name!r}; expected an importable "
                f"package.module:function or path/to/file.py:function"
            ) from e
        raise ComponentLoadError(
            f"cannot import {target!r} for component {name!r}: {_one_line(e)}"
        ) from e
    except Exception as e:
        raise ComponentLoadError(
            f"cannot import {target!r} for component {name!r}: {_one_line(e)}"
        ) from e
    fn = getattr(module, fn_name, None)
    if fn is None or not callable(fn) or isinstance(fn, type):
        functions = _public_functions(module)
        raise ComponentNotFoundError(
            f"function {fn_name!r} not found in module {target!r}{did_you_mean(fn_name, functions)}"
            f"; functions defined there: {', '.join(functions) or 'none'}"
        )
    return _make_def(name, fn, source="module")


# -------------------------------------------------------------------- registered


_REG_LOCK: Final = threading.Lock()
_REG_CACHE: dict[str, ComponentDef] = {}
_REG_OWNER: list[Registry] = []  # the registry _REG_CACHE was filled from


def _registry_cache(registry: Registry) -> dict[str, ComponentDef]:
    if not _REG_OWNER or _REG_OWNER[0] is not registry:
        with _REG_LOCK:
            _REG_CACHE.clear()
            _REG_OWNER[:] = [registry]
    return _REG_CACHE


def _from_registry(name: str) -> ComponentDef:
    from torchx.specs.plugins import UnknownPluginEntry, get_registry

    registry = get_registry()
    cache = _registry_cache(registry)
    found = cache.get(name)
    if found is not None:
        return found
    try:
        entry = registry.find_component(name)
    except UnknownPluginEntry:
        from torchx.specs.errors import did_you_mean

        names = list(registry.list_components())
        hint = ""
        if ":" not in name and name.endswith(".py"):
            hint = f"; to run a function in a file, name it too: {name}:function"
        raise ComponentNotFoundError(
            f"unknown component {name!r}{did_you_mean(name, names)}{hint}; {_SEE_ALSO}"
        ) from None
    fn = entry.load()
    if not callable(fn):
        raise ComponentLoadError(
            f"component {name!r} from {entry.source} is a {type(fn).__name__}, not a function"
        )
    cdef = _make_def(name, fn, source=entry.source)
    with _REG_LOCK:
        cache[name] = cdef
    return cdef


# ------------------------------------------------------------------------ public


def get_component(name: str) -> ComponentDef:
    """Finds the component ``name``: ``file.py:fn``, ``package.module:fn`` or a registered name.

    Args:
        name: the component's name as given to ``torchx run``.

    Returns:
        The component, with its function and description.

    Raises:
        ComponentNotFoundError: no such file, module, function or registered
            name (with the nearest names).
        ComponentLoadError: the file or module fails to import (the cause in one line).
        torchx.specs.plugins.PluginLoadError: a plugin's component fails to load.
    """
    if not isinstance(name, str) or not name.strip():
        raise ComponentNotFoundError(f"a component name is needed (e.g. dist.ddp), got {name!r}")
    if ":" in name:
        target, _, fn_name = name.rpartition(":")
        if _looks_like_path(target):
            return _from_file(name, target, fn_name)
        if _dotted(target) and fn_name.isidentifier():
            return _from_module(name, target, fn_name)
    return _from_registry(name)


def list_components() -> dict[str, ComponentDef]:
    """Every registered component (built-ins and plugins), by name, sorted.

    These are the public functions annotated ``-> AppDef`` of the registered
    component groups and the single registered components. Modules that fail
    to import are skipped and reported in ``get_registry().failures``.
    """
    from torchx.specs.plugins import PluginError, get_registry

    registry = get_registry()
    out: dict[str, ComponentDef] = {}
    for cname, entry in registry.list_components().items():
        try:
            fn = entry.load()
        except PluginError:
            continue
        if callable(fn) and _returns_appdef(fn):
            out[cname] = _make_def(cname, fn, source=entry.source)
    return out

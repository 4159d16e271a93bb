"""Components: plain Python functions that return an :class:`~torchx.specs.AppDef`.

A component is how a job is described once and launched anywhere. ``torchx run
COMPONENT [ARGS]`` finds the function, builds a command line parser from its
signature and docstring, calls it with the parsed arguments, and hands the
AppDef to a scheduler. Writing one takes four rules (checked by
``torchx.specs.file_linter.validate`` without running your code):

1. a Google-style docstring: the first paragraph is the component's description
   (``torchx builtins``), the ``Args:`` section the help of each option;
2. every parameter annotated with ``str``, ``int``, ``float``, ``bool``,
   ``list[X]``, ``dict[K, V]`` or an optional one of these (``X | None``);
3. the return annotated ``-> AppDef``;
4. no ``**kwargs`` (the command line could not know their names).

Each parameter becomes ``--name`` (a one-letter one also ``-x``); a parameter
without a default is a required option; ``*args`` takes the remaining command
line (put it after ``--`` when it starts with an option). Values are written
``true``/``false`` for bools, ``a,b,c`` for lists and ``K1=v1,K2=v2`` for dicts:

>>> from torchx.components import materialize_appdef
>>> from torchx.specs import AppDef, Role
>>> def greet(*names: str, greeting: str = "hello", n: int = 1, loud: bool = False) -> AppDef:
...     '''Greets people, once per replica.
...
...     Args:
...         names: who to greet
...         greeting: what to say
...         n: number of replicas
...         loud: shout it
...     '''
...     text = " ".join([greeting, *names])
...     return AppDef(name="greet", roles=[Role(
...         name="greet", image=".", entrypoint="echo",
...         args=[text.upper() if loud else text], num_replicas=n)])
>>> app = materialize_appdef(greet, ["-n", "2", "--loud", "true", "alice", "bob"])
>>> app.roles[0].args, app.roles[0].num_replicas
(['HELLO ALICE BOB'], 2)

Run it with ``torchx run path/to/file.py:greet -n 2 alice``, or, once its module
is importable, ``torchx run my_pkg.greetings:greet``. A plugin distribution can
give it a short name through the ``torchx_components`` hook (see
:mod:`torchx.specs.hookspecs`); the built-in ``dist`` and ``utils`` groups are
contributed that way by torchx-runner itself. Defaults can be changed per user
or project in ``.torchxconfig`` (``[component:greet]`` then ``greeting = hi``).

What this package offers:

* :func:`get_component` (name to :class:`ComponentDef`) and
  :func:`list_components` (every installed component), in :mod:`.finder`;
* :func:`materialize_appdef` and :func:`component_parser`, in :mod:`.args`;
* the built-ins: :mod:`.dist` (``dist.ddp``, ``dist.spmd``) and :mod:`.utils`
  (``utils.echo``, ``utils.sh``, ``utils.python``, ...);
* the errors of :mod:`.errors`.

The built-ins default ``image`` to :data:`DEFAULT_IMAGE`, ``"."``: the directory
torchx is launched from, where the local scheduler runs the job. For a
container scheduler pass a container image (``--image``, or ``image = ...`` in
the component's ``.torchxconfig`` section).

Names load on first use: importing this package costs nearly nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from torchx.components.args import component_parser, materialize_appdef
    from torchx.components.errors import (
        ComponentArgError,
        ComponentError,
        ComponentHelpRequested,
        ComponentLoadError,
        ComponentNotFoundError,
    )
    from torchx.components.finder import ComponentDef, get_component, list_components

#: The built-in components' default ``image``: the launch directory, for the local scheduler.
DEFAULT_IMAGE: Final = "."

_LAZY: Final[dict[str, str]] = {
    "component_parser": "torchx.components.args",
    "materialize_appdef": "torchx.components.args",
    "ComponentArgError": "torchx.components.errors",
    "ComponentError": "torchx.components.errors",
    "ComponentHelpRequested": "torchx.components.errors",
    "ComponentLoadError": "torchx.components.errors",
    "ComponentNotFoundError": "torchx.components.errors",
    "ComponentDef": "torchx.components.finder",
    "get_component": "torchx.components.finder",
    "list_components": "torchx.components.finder",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'torchx.components' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "DEFAULT_IMAGE",
    "ComponentArgError",
    "ComponentDef",
    "ComponentError",
    "ComponentHelpRequested",
    "ComponentLoadError",
    "ComponentNotFoundError",
    "component_parser",
    "get_component",
    "list_components",
    "materialize_appdef",
]

"""The component argument parser, under the name this package has always used.

The parser lives in :mod:`torchx.specs.builders` (upstream TorchX's home for it,
so that ``torchx.specs.materialize_appdef`` works with only torchx-specs
installed); these are the same functions, with the keyword names this package's
callers use (``defaults=``, ``prog=``).

>>> from torchx.components.args import materialize_appdef
>>> from torchx.components.utils import echo
>>> materialize_appdef(echo, ["--msg", "hi", "--num_replicas", "2"]).roles[0].args
['hi']
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from torchx.specs.api import AppDef
from torchx.specs.builders import ParamType, component_parser, param_types
from torchx.specs.builders import materialize_appdef as _materialize_appdef

__all__ = ["ParamType", "component_parser", "materialize_appdef", "param_types"]


def materialize_appdef(
    fn: Callable[..., Any],
    argv: Sequence[str],
    defaults: Mapping[str, str] | None = None,
    prog: str | None = None,
) -> AppDef:
    """:func:`torchx.specs.builders.materialize_appdef` with ``defaults``/``prog`` keywords.

    Strict about ``defaults`` (``strict_defaults=True``): they come from
    ``.torchxconfig``, where a mistyped name is refused in one line rather than ignored.
    """
    return _materialize_appdef(fn, argv, defaults, prog=prog, strict_defaults=True)

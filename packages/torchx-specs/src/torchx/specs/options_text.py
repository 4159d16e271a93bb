"""Run options as text: the ``-cfg`` string, its JSON form, and the table of a schema.

:class:`~torchx.specs.options.runopts` is the schema (what a scheduler accepts, and
:meth:`~torchx.specs.options.runopts.resolve` checking a cfg against it); a user writes
the values as text, on the command line (``-cfg queue=gpu,tags=a,b``), in JSON or in
``.torchxconfig``, and reads the schema as the table ``torchx runopts`` prints. This
module reads and writes those texts; ``runopts``' methods of upstream's names
(``cfg_from_str``, ``cfg_from_json_repr``, ``cfg_to_str``, ``str()``) are its entry
points, and it is imported only when one of them is called.

>>> from torchx.specs.options import runopts
>>> opts = runopts()
>>> opts.add("tags", type_=list[str], help="tags")
>>> opts.add("n", type_=int, default=1, help="count")
>>> cfg_from_str(opts, "tags=a,b,n=2", strict=False)
{'tags': ['a', 'b'], 'n': 2}
>>> cfg_to_str(cfg_from_str(opts, "tags=a,b,n=2", strict=False))
'tags=a,b,n=2'
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from torchx.specs._option_types import type_name
from torchx.specs.errors import InvalidRunConfigException

if TYPE_CHECKING:
    from torchx.specs.options import CfgVal, runopts

# a key starts at the beginning of the string or right after a ',' or ';' delimiter
_KEY = re.compile(r"(?:^|[,;])\s*([^,;=\s][^,;=]*?)\s*=")


def cfg_from_str(opts: runopts, cfg_str: str, *, strict: bool) -> dict[str, CfgVal]:
    """``opts.cfg_from_str(cfg_str, strict=strict)``: see :meth:`runopts.cfg_from_str
    <torchx.specs.options.runopts.cfg_from_str>` for the rules."""
    if not isinstance(cfg_str, str):
        raise InvalidRunConfigException(f"run config must be a string, got {cfg_str!r}")
    text = cfg_str.strip()
    if not text:
        return {}
    matches = list(_KEY.finditer(text))
    if not matches or matches[0].start() != 0 or text[0] in ",;":
        head = text.split(",")[0]
        raise InvalidRunConfigException(
            f"malformed run config {cfg_str!r}: {head!r} is not KEY=VALUE; "
            "expected KEY=VALUE pairs separated by ',' or ';' (e.g. queue=gpu,priority=1)"
        )
    cfg: dict[str, CfgVal] = {}
    for i, match in enumerate(matches):
        key = match.group(1).strip()
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        raw = text[match.end() : end].strip()
        name = opts.canonical_name(key)
        opt = opts.get(name) if name is not None else None
        if name is None or opt is None:
            if strict:
                raise opts._unknown(key, f" in {cfg_str!r}")
            continue
        cfg[name] = opt.cast_to_type(raw)
    return cfg


def cfg_from_json_repr(opts: runopts, json_repr: str) -> dict[str, CfgVal]:
    """``opts.cfg_from_json_repr(json_repr)``: see :meth:`runopts.cfg_from_json_repr
    <torchx.specs.options.runopts.cfg_from_json_repr>`."""
    import json

    try:
        raw = json.loads(json_repr)
    except json.JSONDecodeError as e:
        raise InvalidRunConfigException(
            f"run config is not valid JSON: {e.msg} at char {e.pos}"
        ) from None
    if not isinstance(raw, dict):
        raise InvalidRunConfigException(
            f"run config JSON must be an object of option names to values, got {type(raw).__name__}"
        )
    cfg: dict[str, CfgVal] = {}
    for key, value in raw.items():
        opt = opts.get(key)
        name = opts.canonical_name(key) or key
        if opt is None or value is None or opts.is_type(value, opt.opt_type):
            cfg[name] = value
        elif isinstance(value, str):
            cfg[name] = opt.cast_to_type(value)
        elif opt.opt_type is str and isinstance(value, (int, float)):
            cfg[name] = str(value)
        else:
            raise InvalidRunConfigException(
                f"run option '{name}' expects {type_name(opt.opt_type)}, got {value!r}"
            )
    return cfg


def cfg_to_str(cfg: Mapping[str, CfgVal]) -> str:
    """``cfg`` in the string form :func:`cfg_from_str` reads (None values left out)."""
    parts = []
    for key, value in cfg.items():
        if value is None:
            continue
        if isinstance(value, list):
            text = ",".join(value)
        elif isinstance(value, dict):
            text = ",".join(f"{k}:{v}" for k, v in value.items())
        else:
            text = str(value)
        parts.append(f"{key}={text}")
    return ",".join(parts)


def table(opts: runopts, width: int | None = None) -> str:
    """The schema as ``torchx runopts`` prints it: name, type, default or (required), help.

    ``width`` (a terminal's columns): each help is wrapped to fit, its next lines under
    its first, as argparse wraps an option's help; where the help column would be narrower
    than 24 characters, the help starts on the next line instead. None: one line each.

    >>> from torchx.specs.options import runopts
    >>> opts = runopts()
    >>> opts.add("queue", type_=str, help="the queue to submit to, named as the cluster names it")
    >>> print(table(opts, width=40))
        queue    str
            the queue to submit to, named as
            the cluster names it
    """
    rows = []
    for name, opt in opts:
        if opt.is_required:
            state = "(required)"
        elif opt.default is None:
            state = ""
        else:
            state = f"(default: {opt.default})"
        rows.append((name, type_name(opt.opt_type), state, opt.help))
    if not rows:
        return "    (no options)"
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = [
        f"    {n:<{widths[0]}}    {t:<{widths[1]}}  {s:<{widths[2]}}  {h}".rstrip()
        for n, t, s, h in rows
    ]
    if width is None or all(len(line) <= width for line in lines):
        return "\n".join(lines)
    import textwrap

    column = 4 + widths[0] + 4 + widths[1] + 2 + widths[2] + 2
    below = width - column < 24  # too narrow beside the columns: under them instead
    indent = " " * (8 if below else column)
    out = []
    for line, (_, _, _, help_) in zip(lines, rows, strict=True):
        if len(line) <= width or not help_:
            out.append(line)
            continue
        head = line[: len(line) - len(help_)].rstrip()
        wrapped = textwrap.wrap(help_, max(width - len(indent), 20))
        if below:
            out.extend([head, *(indent + w for w in wrapped)])
        else:
            out.extend([head.ljust(column) + wrapped[0], *(indent + w for w in wrapped[1:])])
    return "\n".join(out)

"""Plain data (a Kubernetes object) as block YAML, fast: what ``--dryrun`` prints.

The objects the scheduler makes hold only dicts, lists, strings, ints, floats, bools
and None, so a small emitter does: PyYAML's dumpers build a node graph in Python first
(even with libyaml's C emitter, about 100 ms for the 128-task Volcano Job of
``dist.ddp -j 128x8``), this writes the text directly (about a tenth of that).

Strings are written plain only when no YAML reader could take them for anything else
(a letter, ``_`` or ``/`` first, then letters, digits, ``_``, ``.``, ``/``, ``-``; none of
YAML 1.1's booleans and nulls such as ``yes``, ``off``, ``null``); every other string is
written double-quoted as JSON writes it (a JSON string is a YAML double-quoted scalar;
the few characters YAML wants escaped and JSON does not are escaped too).
So ``yaml.safe_load(render(data)) == data`` for any such data (a property test checks it).

>>> print(render({"spec": {"replicas": 1, "args": ["-m", "train"], "on": "yes"}}), end="")
spec:
  replicas: 1
  args:
  - "-m"
  - train
  "on": "yes"
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

_PLAIN = re.compile(r"[A-Za-z_/][A-Za-z0-9_./-]*")
# YAML 1.1's booleans and nulls (a YAML 1.1 reader, as PyYAML, would not read them as text)
_RESERVED = frozenset(["y", "n", "yes", "no", "on", "off", "true", "false", "null"])
# what a YAML double-quoted scalar must not hold raw (JSON leaves them as they are)
_UNPRINTABLE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\ud800-\udfff]")


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if math.isinf(value):
            return ".inf" if value > 0 else "-.inf"
        text = repr(value)
        # YAML 1.1 reads 1e-05 as text: its floats have a '.' (1.0e-05)
        return text.replace("e", ".0e", 1) if "." not in text and "e" in text else text
    text = str(value)
    if _PLAIN.fullmatch(text) and text.lower() not in _RESERVED:
        return text
    quoted = json.dumps(text, ensure_ascii=False)
    return _UNPRINTABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", quoted)


def _block(value: Any, indent: str, out: list[str]) -> None:
    """Appends ``value`` (a dict or list) as block lines at ``indent``."""
    if isinstance(value, dict):
        for key, item in value.items():
            k = _scalar(key)
            if isinstance(item, dict) and item:
                out.append(f"{indent}{k}:\n")
                _block(item, indent + "  ", out)
            elif isinstance(item, list) and item:
                out.append(f"{indent}{k}:\n")
                _block(item, indent, out)
            else:
                out.append(f"{indent}{k}: {_inline(item)}\n")
        return
    for item in value:
        if isinstance(item, dict) and item:
            # the first key on the dash's line, the rest under it
            inner: list[str] = []
            _block(item, indent + "  ", inner)
            first = inner[0]
            out.append(f"{indent}- {first[len(indent) + 2 :]}")
            out.extend(inner[1:])
        elif isinstance(item, list) and item:
            inner = []
            _block(item, indent + "  ", inner)
            out.append(f"{indent}- {inner[0][len(indent) + 2 :]}")
            out.extend(inner[1:])
        else:
            out.append(f"{indent}- {_inline(item)}\n")


def _inline(value: Any) -> str:
    if isinstance(value, dict):
        return "{}"  # only empty ones are written inline
    if isinstance(value, list):
        return "[]"
    return _scalar(value)


def render(data: Any) -> str:
    """``data`` (dicts, lists, str, int, float, bool, None) as block YAML, keys in order."""
    if isinstance(data, dict | list) and data:
        out: list[str] = []
        _block(data, "", out)
        return "".join(out)
    return _inline(data) + "\n"

"""The kinds of run option types, and their short names: what the schema and its text share.

:mod:`torchx.specs.options` (the schema, :class:`~torchx.specs.options.runopts`) and
:mod:`torchx.specs.options_text` (the ``-cfg`` string, its JSON form and the table
``torchx runopts`` prints) both ask whether an option holds a list or a dict and name
its type in messages. Both import this module and it imports neither, so the text forms
can be split from the schema without the two modules importing each other.
``torchx.specs.options.type_name`` is the public name of :func:`type_name`.

>>> type_name(int), type_name(list[str]), type_name(dict[str, str])
('int', 'list[str]', 'dict[str, str]')
>>> is_list_type(list[str]), is_dict_type(list[str])
(True, False)
"""

from __future__ import annotations

from typing import Any, get_origin

_LIST_TYPES: tuple[Any, ...] = (list, list)
_DICT_TYPES: tuple[Any, ...] = (dict, dict)


def is_list_type(tp: Any) -> bool:
    """Whether an option of type ``tp`` holds a list of strings (``list``, ``list[str]``)."""
    return tp in _LIST_TYPES or get_origin(tp) in _LIST_TYPES


def is_dict_type(tp: Any) -> bool:
    """Whether an option of type ``tp`` holds a dict of strings (``dict``, ``dict[str, str]``)."""
    return tp in _DICT_TYPES or get_origin(tp) in _DICT_TYPES


def type_name(tp: Any) -> str:
    """A short, readable name for an option type: ``int``, ``list[str]``, ``dict[str, str]``."""
    if is_list_type(tp):
        return "list[str]"
    if is_dict_type(tp):
        return "dict[str, str]"
    return getattr(tp, "__name__", str(tp))


# documented (and referred to) as torchx.specs.options.type_name, its public name
type_name.__module__ = "torchx.specs.options"

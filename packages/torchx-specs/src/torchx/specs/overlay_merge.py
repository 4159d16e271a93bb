"""How an overlay merges onto a request: the operators and the merge itself.

:func:`apply_overlay` merges an overlay onto a scheduler's native request: dicts
merge key by key, lists grow, anything else is overwritten, and an operator key says
otherwise (:func:`PUT` replaces, :func:`JOIN` merges list items by a key field,
:func:`DEL` removes). ``set_overlay`` accumulates overlays with the same rules but
keeps the operators in place (``_resolve=False``). See :mod:`torchx.specs.overlays`,
where users import all of these from.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from torchx.specs.errors import SpecError

__all__ = ["DEL", "JOIN", "PUT", "InvalidOverlayException", "Overlay", "apply_overlay"]

#: An overlay: a JSON-safe dict shaped like (part of) a scheduler's native request.
Overlay = dict[str, Any]


class InvalidOverlayException(SpecError):
    """An overlay is malformed or sets fields it must not set.

    Raised for a non-dict overlay, a non-string key, a malformed operator key, a
    :func:`JOIN` item that lacks its key field, an unreadable overlay file, and by
    :func:`~torchx.specs.overlays.validate_overlay` for blocklisted or forbidden keys.
    """


# Operator keys are spelled like the Python calls that make them, which keeps them
# readable in dumps and writable by hand in YAML/JSON overlay files.
_OPERATOR_RE = re.compile(r"^(PUT|JOIN|DEL)\((.*)\)$", re.DOTALL)
_JOIN_SEP = ", on="
_PUT, _JOIN, _DEL = "PUT", "JOIN", "DEL"
_PRIMITIVES = (str, int, float, bool, type(None))


def _check_field(key: object, op: str) -> str:
    if not isinstance(key, str) or not key:
        raise InvalidOverlayException(f"{op}() needs a non-empty field name string, got {key!r}")
    if _OPERATOR_RE.match(key):
        raise InvalidOverlayException(
            f"{op}({key!r}): operators do not nest; pass the plain field name instead"
        )
    return key


def PUT(key: str) -> str:
    """Replace a value entirely instead of merging/appending.

    Use the result as a dict key in an overlay. A list under ``PUT`` replaces the
    base list instead of extending it; a dict replaces the base dict instead of
    merging into it; a primitive is simply set.

    >>> from torchx.specs.overlays import apply_overlay, PUT
    >>> base = {"containers": [{"name": "old1"}, {"name": "old2"}]}
    >>> apply_overlay(base, {PUT("containers"): [{"name": "only"}]})
    >>> base
    {'containers': [{'name': 'only'}]}
    """
    return f"{_PUT}({_check_field(key, _PUT)})"


def JOIN(key: str, *, on: str) -> str:
    """Strategic merge list items by key field.

    Use the result as a dict key in an overlay whose value is a list of dicts, each
    having the ``on`` field. Every base item with the same ``on`` value gets the
    overlay item merged into it; overlay items that match nothing are appended.
    This is how to change one container of a pod without restating the others.

    >>> from torchx.specs.overlays import apply_overlay, JOIN
    >>> base = {"containers": [{"name": "main", "image": "v1", "cpu": "1"}]}
    >>> apply_overlay(base, {JOIN("containers", on="name"): [
    ...     {"name": "main", "memory": "1Gi"},
    ...     {"name": "sidecar", "image": "proxy"},
    ... ]})
    >>> base
    {'containers': [{'name': 'main', 'image': 'v1', 'cpu': '1', 'memory': '1Gi'}, {'name': 'sidecar', 'image': 'proxy'}]}

    Raises:
        TypeError: at apply time, if the base value is not a list or the base list
            contains non-dict items (there is no field to match them by).
    """
    field = _check_field(key, _JOIN)
    if not isinstance(on, str) or not on or any(c in on for c in ",()="):
        raise InvalidOverlayException(
            f"JOIN({key!r}, on={on!r}): 'on' must be a non-empty field name "
            "without ',', '(', ')' or '='"
        )
    return f"{_JOIN}({field}{_JOIN_SEP}{on})"


def DEL(key: str) -> str:
    """Remove a key from the base dict.

    Use the result as a dict key in an overlay; its value is ignored (by
    convention ``None``). Removing a field is not the same as setting it to
    ``None``: with ``DEL`` the field is not sent at all (thrift/protobuf: the
    server applies its default), with ``"field": None`` it is sent as null.

    >>> from torchx.specs.overlays import apply_overlay, DEL
    >>> base = {"keep": 1, "remove_me": "old"}
    >>> apply_overlay(base, {DEL("remove_me"): None})
    >>> base
    {'keep': 1}
    """
    return f"{_DEL}({_check_field(key, _DEL)})"


def _where(path: str, field: str) -> str:
    return f"{path}.{field}" if path else field


def parse_key(key: object, path: str) -> tuple[str | None, str, str]:
    """Split an overlay key into ``(operator or None, field, join key)``."""
    if not isinstance(key, str):
        raise InvalidOverlayException(
            f"overlay keys must be strings, got {key!r} at {path or 'the top level'}"
        )
    match = _OPERATOR_RE.match(key)
    if match is None:
        return None, key, ""
    op, inner = match.group(1), match.group(2)
    if op == _JOIN:
        field, sep, on = inner.rpartition(_JOIN_SEP)
        if not sep or not field or not on or any(c in on for c in ",()="):
            raise InvalidOverlayException(
                f"malformed operator key {key!r} at {path or 'the top level'}: "
                "expected 'JOIN(field, on=key)', as made by JOIN('field', on='key')"
            )
        return op, field, on
    if not inner:
        raise InvalidOverlayException(
            f"malformed operator key {key!r} at {path or 'the top level'}: "
            f"expected '{op}(field)', as made by {op}('field')"
        )
    return op, inner, ""


def _field_name(key: str) -> str:
    """The plain field a (possibly operator) key refers to."""
    return parse_key(key, "")[1]


def check_overlay(overlay: object, what: str) -> dict[str, Any]:
    if not isinstance(overlay, dict):
        raise InvalidOverlayException(
            f"{what} must be a dict of field name to value, "
            f"got {type(overlay).__name__}: {overlay!r:.80}"
        )
    return overlay


def _copy_value(value: Any) -> Any:
    return value if isinstance(value, _PRIMITIVES) else copy.deepcopy(value)


# ---------------------------------------------------------------- applying (_resolve=True)


def _resolved(value: Any, where: str) -> Any:
    """A fresh copy of ``value`` with every operator key resolved away."""
    if isinstance(value, dict):
        fresh: dict[str, Any] = {}
        _apply(fresh, value, where)
        return fresh
    if isinstance(value, list):
        return [_resolved(v, f"{where}[{i}]") for i, v in enumerate(value)]
    return _copy_value(value)


def _apply(base: dict[str, Any], overlay: dict[str, Any], path: str) -> None:
    for key, value in overlay.items():
        op, field, on = parse_key(key, path)
        where = _where(path, field)
        if op is None:
            current = base.get(field)
            if isinstance(value, dict) and isinstance(current, dict):
                _apply(current, value, where)
            elif isinstance(value, list) and isinstance(current, list):
                start = len(current)
                current.extend(_resolved(v, f"{where}[{start + i}]") for i, v in enumerate(value))
            else:
                base[field] = _resolved(value, where)
        elif op == _PUT:
            base[field] = _resolved(value, where)
        elif op == _DEL:
            base.pop(field, None)
        else:
            _join(base, field, on, value, where)


def _check_join_items(items: object, field: str, on: str, where: str) -> list[dict[str, Any]]:
    if not isinstance(items, list):
        raise InvalidOverlayException(
            f"JOIN({field!r}, on={on!r}) at {where} needs a list of dicts, "
            f"got {type(items).__name__}: {items!r:.80}"
        )
    for i, item in enumerate(items):
        if not isinstance(item, dict) or on not in item:
            raise InvalidOverlayException(
                f"JOIN({field!r}, on={on!r}) at {where}: item {i} has no {on!r} key "
                f"to match by: {item!r:.80}"
            )
    return items


def _join(base: dict[str, Any], field: str, on: str, items: object, where: str) -> None:
    checked = _check_join_items(items, field, on, where)
    current = base.get(field)
    if current is None:
        current = base[field] = []
    elif not isinstance(current, list):
        raise TypeError(
            f"cannot JOIN into {where!r}: the base value is a {type(current).__name__}, not a list"
        )
    for j, existing in enumerate(current):
        if not isinstance(existing, dict):
            raise TypeError(
                f"cannot JOIN into {where!r} on {on!r}: base item {j} is a "
                f"{type(existing).__name__} ({existing!r:.40}), not a dict"
            )
    missing = object()
    for item in checked:
        matched = False
        for j, existing in enumerate(current):
            if existing.get(on, missing) == item[on]:
                _apply(existing, item, f"{where}[{j}]")
                matched = True
        if not matched:
            current.append(_resolved(item, f"{where}[{len(current)}]"))


# ------------------------------------------------------------ accumulating (_resolve=False)


def _normalized(value: Any, where: str) -> Any:
    """A fresh copy of ``value`` with operator keys kept (and validated)."""
    if isinstance(value, dict):
        fresh: dict[str, Any] = {}
        _accumulate(fresh, value, where)
        return fresh
    if isinstance(value, list):
        return [_normalized(v, f"{where}[{i}]") for i, v in enumerate(value)]
    return _copy_value(value)


def _accumulate(stored: dict[str, Any], overlay: dict[str, Any], path: str) -> None:
    # Invariant kept in ``stored``: per field at most one operator key, then at most one
    # plain key after it, so applying ``stored`` key by key equals applying the calls
    # in sequence (except that an operator drops what came before it for its field).
    for key, value in overlay.items():
        op, field, on = parse_key(key, path)
        where = _where(path, field)
        if op is not None:
            for old in [k for k in stored if _field_name(k) == field]:
                del stored[old]
            if op == _JOIN:
                _check_join_items(value, field, on, where)
            stored[key] = None if op == _DEL else _normalized(value, where)
            continue
        if field not in stored:
            stored[field] = _normalized(value, where)
            continue
        current = stored[field]
        if isinstance(value, dict) and isinstance(current, dict):
            _accumulate(current, value, where)
        elif isinstance(value, list) and isinstance(current, list):
            current.extend(_normalized(v, where) for v in value)
        elif isinstance(value, dict | list):
            # The earlier value overwrote the base and this one overwrites it in turn
            # (a container never merges into a value of another type), so together
            # they replace the field: that is what PUT says.
            for old in [k for k in stored if _field_name(k) == field]:
                del stored[old]
            stored[PUT(field)] = _normalized(value, where)
        else:
            stored[field] = _normalized(value, where)


def apply_overlay(base: dict[str, Any], overlay: dict[str, Any], *, _resolve: bool = True) -> None:
    """Merge overlay into base in-place.

    Default rules, field by field:

    1. dict onto dict: recursive merge (keys are upserted)
    2. list onto list: the overlay's items are appended
    3. anything else: the overlay's value overwrites (``None`` included)

    Operator keys (see :func:`PUT`, :func:`JOIN`, :func:`DEL`) change the rule for
    their field: ``PUT`` replaces the value, ``JOIN`` merges list items matched by
    a key field, ``DEL`` removes the field. Keys take effect in the overlay's order.
    Values are copied, so later changes to ``overlay`` do not reach ``base``.

    During accumulation (repeated :func:`~torchx.specs.overlays.set_overlay` calls), an operator for a
    field replaces the earlier operations on that field: the last call wins.

    >>> from torchx.specs.overlays import apply_overlay, PUT, JOIN, DEL

    >>> # Dicts merge recursively, lists append, primitives overwrite
    >>> base = {"spec": {"cpu": "500m"}, "tags": ["prod"], "replicas": 1}
    >>> apply_overlay(base, {"spec": {"memory": "1Gi"}, "tags": ["gpu"], "replicas": 3})
    >>> base
    {'spec': {'cpu': '500m', 'memory': '1Gi'}, 'tags': ['prod', 'gpu'], 'replicas': 3}

    >>> # PUT replaces a list instead of appending
    >>> base = {"containers": [{"name": "old1"}, {"name": "old2"}]}
    >>> apply_overlay(base, {PUT("containers"): [{"name": "only"}]})
    >>> base
    {'containers': [{'name': 'only'}]}

    >>> # JOIN: match containers by name, merge their fields
    >>> base = {"containers": [{"name": "main", "image": "v1"}]}
    >>> apply_overlay(base, {JOIN("containers", on="name"): [
    ...     {"name": "main", "memory": "1Gi"},
    ... ]})
    >>> base
    {'containers': [{'name': 'main', 'image': 'v1', 'memory': '1Gi'}]}

    >>> # DEL: remove a key from the base
    >>> base = {"keep": 1, "remove": "old"}
    >>> apply_overlay(base, {DEL("remove"): None})
    >>> base
    {'keep': 1}

    Args:
        base: the request dict to modify.
        overlay: the overlay to merge onto it.
        _resolve: internal, do not pass. ``True`` (default) resolves operator keys
            into their effect on plain fields; ``False`` keeps them as keys, which
            is how :func:`~torchx.specs.overlays.set_overlay` accumulates overlays in metadata.

    Raises:
        InvalidOverlayException: the overlay is not a dict, has a non-string or
            malformed operator key, or a JOIN item lacks its key field.
        TypeError: a JOIN targets a base value that is not a list of dicts.
    """
    if not isinstance(base, dict):
        raise TypeError(f"apply_overlay needs a dict to merge into, got {type(base).__name__}")
    check_overlay(overlay, "an overlay")
    if _resolve:
        _apply(base, overlay, "")
    else:
        _accumulate(base, overlay, "")

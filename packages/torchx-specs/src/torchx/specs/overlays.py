"""Overlays: scheduler request fields that an AppDef or Role cannot express.

Every scheduler turns a :class:`~torchx.specs.Role` into a native request (a
Kubernetes pod, an AWS Batch job definition, ...). Those requests have far more
fields than ``Role`` models. An *overlay* is a plain dict, shaped like a piece of
that native request, that the scheduler merges onto the request it built, so a
component can reach any native field without TorchX growing an attribute for it.

Overlays live in ``target.metadata[namespace][kind]`` (``namespace`` names the
scheduler, ``kind`` the native struct), so they travel with the AppDef as plain
JSON-safe data. Components write them with :func:`set_overlay`; schedulers read
them with :func:`get_overlay`, check them with :func:`validate_overlay` and merge
them with :func:`apply_overlay`.

For Users
---------

Attach scheduler-specific fields to a Role (or an AppDef) with :func:`set_overlay`:

>>> from torchx.specs import Role
>>> from torchx.specs.overlays import set_overlay, get_overlay

>>> # Kubernetes: add a node selector to a role
>>> role = Role(name="trainer", image="my-image", entrypoint="train.py")
>>> set_overlay(role, "kubernetes", "V1Pod", {
...     "spec": {"nodeSelector": {"accelerator": "a100"}},
... })

>>> # Multiple set_overlay calls merge (dicts upsert, lists append)
>>> set_overlay(role, "kubernetes", "V1Pod", {
...     "spec": {"tolerations": [{"key": "gpu", "operator": "Exists"}]},
... })
>>> get_overlay(role, "kubernetes", "V1Pod")
{'spec': {'nodeSelector': {'accelerator': 'a100'}, 'tolerations': [{'key': 'gpu', 'operator': 'Exists'}]}}

Operators
---------

Merging is the default: dicts merge key by key, lists grow, anything else is
overwritten. When a field needs different treatment, wrap its key in an operator:
:func:`PUT` (replace), :func:`JOIN` (merge list items by a key field) or
:func:`DEL` (remove):

>>> from torchx.specs import Role
>>> from torchx.specs.overlays import set_overlay, PUT, JOIN, DEL

>>> role = Role(name="trainer", image="my-image", entrypoint="train.py")

>>> # PUT: replace a list instead of appending
>>> set_overlay(role, "kubernetes", "V1Pod", {
...     "spec": {PUT("containers"): [{"name": "only"}]},
... })

>>> # JOIN: strategic merge list items by key field
>>> set_overlay(role, "kubernetes", "V1Pod", {
...     "spec": {JOIN("initContainers", on="name"): [
...         {"name": "setup", "image": "init:v2"},
...     ]},
... })

>>> # DEL: remove a field (server uses its default)
>>> set_overlay(role, "kubernetes", "V1Pod", {DEL("hostNetwork"): None})

An operator is just a string key (``PUT("containers")`` is the string
``'PUT(containers)'``, ``JOIN("containers", on="name")`` is
``'JOIN(containers, on=name)'``), so an overlay with operators is still a plain
dict that survives JSON or YAML, and a file-backed overlay can use the same
spelling. Parentheses never appear in the field names of the request formats that
schedulers build (Kubernetes, protobuf, thrift, AWS APIs), so operator keys do not
clash with real fields. The operators stay in the metadata as they are and take
effect when the scheduler calls :func:`apply_overlay` at submit time.

Within one overlay dict, keys take effect in order. When :func:`set_overlay` is
called again for the same ``(namespace, kind)``, an operator on a field replaces
whatever earlier calls set for that field (the last call wins); a plain key after
an operator still merges on top of the operator's result.

``None`` vs ``DEL`` vs missing key — three different outcomes:

* key missing from the overlay: the base field is left as it is;
* ``"field": None``: the field is set to ``None`` (thrift/protobuf: present but null);
* ``DEL("field"): None``: the field is removed from the base (thrift/protobuf: not
  sent at all, so the server applies its default).

For Scheduler Implementors
--------------------------

::

    from torchx.specs.overlays import apply_overlay, get_overlay, validate_overlay

    def _submit_dryrun(self, app, cfg):
        request = build_request_from_role(app.roles[0])
        overlay = get_overlay(app.roles[0], "my_scheduler", "JobSpec")
        validate_overlay(overlay, blocklist=["command", "env"], overlay_name="JobSpec")
        apply_overlay(request, overlay)  # resolves PUT/JOIN/DEL itself
        return request

``metadata[namespace]`` may also be a string: the path (or fsspec URI) of a JSON
or YAML file holding ``{kind: overlay}``; :func:`get_overlay` loads it.
"""

from __future__ import annotations

import copy
import re
from typing import TYPE_CHECKING, Any

from torchx.specs.errors import SpecError

if TYPE_CHECKING:
    from torchx.specs.api import AppDef, Role

__all__ = [
    "DEL",
    "JOIN",
    "PUT",
    "InvalidOverlayException",
    "apply_overlay",
    "get_overlay",
    "set_overlay",
    "validate_overlay",
]

#: An overlay: a JSON-safe dict shaped like (part of) a scheduler's native request.
_Overlay = dict[str, Any]


class InvalidOverlayException(SpecError):
    """An overlay is malformed or sets fields it must not set.

    Raised for a non-dict overlay, a non-string key, a malformed operator key, a
    :func:`JOIN` item that lacks its key field, an unreadable overlay file, and by
    :func:`validate_overlay` for blocklisted or forbidden keys.
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


def _parse_key(key: object, path: str) -> tuple[str | None, str, str]:
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
    return _parse_key(key, "")[1]


def _check_overlay(overlay: object, what: str) -> dict[str, Any]:
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
        op, field, on = _parse_key(key, path)
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
        op, field, on = _parse_key(key, path)
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

    During accumulation (repeated :func:`set_overlay` calls), an operator for a
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
            is how :func:`set_overlay` accumulates overlays in metadata.

    Raises:
        InvalidOverlayException: the overlay is not a dict, has a non-string or
            malformed operator key, or a JOIN item lacks its key field.
        TypeError: a JOIN targets a base value that is not a list of dicts.
    """
    if not isinstance(base, dict):
        raise TypeError(f"apply_overlay needs a dict to merge into, got {type(base).__name__}")
    _check_overlay(overlay, "an overlay")
    if _resolve:
        _apply(base, overlay, "")
    else:
        _accumulate(base, overlay, "")


# ------------------------------------------------------------------------- storage


def set_overlay(target: AppDef | Role, namespace: str, kind: str, overlay: _Overlay) -> None:
    """Store an overlay in ``target.metadata[namespace][kind]``.

    Repeated calls for the same ``(namespace, kind)`` accumulate the way
    :func:`apply_overlay` merges (dicts merge, lists append, primitives overwrite),
    with operator keys kept for the scheduler to resolve at submit time; an
    operator on a field replaces earlier entries for that field. Applying the
    accumulated overlay has the same effect as applying each call's overlay in
    turn (except that a later operator discards earlier entries for its field), so
    a dict or list stored over a value of another type is recorded as a
    :func:`PUT`. The overlay is copied: changing the dict afterwards does not change
    what was stored.

    Args:
        target: the Role or AppDef the overlay belongs to.
        namespace: scheduler namespace (e.g. ``"kubernetes"``, ``"mast"``).
        kind: scheduler struct type (e.g. ``"V1Pod"``, ``"HpcJobDefinition"``).
        overlay: the overlay dict; may use :func:`PUT`, :func:`JOIN`, :func:`DEL` keys.

    Raises:
        InvalidOverlayException: the overlay is malformed, or ``metadata[namespace]``
            already holds something other than a dict (for example a file reference).
    """
    _check_overlay(overlay, f"the {kind} overlay")
    metadata: dict[str, Any] = target.metadata
    section = metadata.get(namespace)
    if section is None:
        section = metadata[namespace] = {}
    elif isinstance(section, str):
        raise InvalidOverlayException(
            f"metadata[{namespace!r}] refers to the overlay file {section!r}; "
            f"set_overlay cannot add to a file: edit the file or remove the reference first"
        )
    elif not isinstance(section, dict):
        raise InvalidOverlayException(
            f"metadata[{namespace!r}] is a {type(section).__name__}, not a dict of "
            f"kind to overlay; cannot store the {kind} overlay there"
        )
    stored = section.get(kind)
    if stored is None:
        stored = section[kind] = {}
    elif not isinstance(stored, dict):
        raise InvalidOverlayException(
            f"metadata[{namespace!r}][{kind!r}] is a {type(stored).__name__}, not an overlay dict"
        )
    apply_overlay(stored, overlay, _resolve=False)


def get_overlay(target: AppDef | Role, namespace: str, kind: str) -> _Overlay:
    """Retrieve the overlay stored in ``target.metadata[namespace][kind]``.

    Returns ``{}`` when nothing is stored. The result is a copy: a scheduler may
    keep or change it without touching the target.

    If ``metadata[namespace]`` is a string, it is the path of a JSON or YAML file
    (``.json`` is read as JSON, anything else as YAML, which also reads JSON) holding
    ``{kind: overlay}``. Local paths and ``file://`` URIs are read directly; other
    URIs (``s3://...``) go through fsspec, which must then be installed.

    For backwards compatibility, when ``kind`` is not a key of a non-empty
    ``metadata[namespace]``, the whole namespace dict is returned as a flat overlay
    and a :class:`DeprecationWarning` says how to store it under ``kind`` instead.

    Raises:
        InvalidOverlayException: the file cannot be read or parsed, or the stored
            value is not a dict.
    """
    section = target.metadata.get(namespace)
    if section is None:
        return {}
    if isinstance(section, str):
        section = _load_overlay_file(section, namespace)
    if not isinstance(section, dict):
        raise InvalidOverlayException(
            f"metadata[{namespace!r}] is a {type(section).__name__}; expected a dict of "
            f"kind to overlay or the path of a JSON/YAML overlay file"
        )
    if kind in section:
        overlay = section[kind]
        if overlay is None:
            return {}
        return copy.deepcopy(_check_overlay(overlay, f"metadata[{namespace!r}][{kind!r}]"))
    if not section:
        return {}
    import warnings  # deferred: only the legacy path needs it

    warnings.warn(
        f"metadata[{namespace!r}] has no {kind!r} entry, so the whole namespace is used as "
        f"the {kind} overlay; this layout is deprecated, store it with "
        f"set_overlay(target, {namespace!r}, {kind!r}, overlay) instead",
        DeprecationWarning,
        stacklevel=2,
    )
    return copy.deepcopy(section)


def _read_text(location: str, namespace: str) -> str:
    import importlib  # deferred: file-backed overlays are rare

    scheme, sep, rest = location.partition("://")
    if sep and scheme != "file":
        try:
            fsspec: Any = importlib.import_module("fsspec")
        except ImportError:
            raise InvalidOverlayException(
                f"metadata[{namespace!r}] refers to {location!r}; reading {scheme}:// "
                "URIs needs fsspec (pip install fsspec) or use a local path"
            ) from None
        try:
            with fsspec.open(location, "r", encoding="utf-8") as f:
                text: str = f.read()
                return text
        except Exception as e:
            raise InvalidOverlayException(
                f"cannot read overlay file {location!r} from metadata[{namespace!r}]: {e}"
            ) from e
    path = rest if sep else location
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise InvalidOverlayException(
            f"cannot read overlay file {location!r} from metadata[{namespace!r}]: {e.strerror or e}"
        ) from e


def _load_overlay_file(location: str, namespace: str) -> Any:
    import importlib  # deferred: json/yaml are only needed for file-backed overlays

    text = _read_text(location, namespace)
    if location.lower().endswith(".json"):
        json: Any = importlib.import_module("json")
        try:
            return json.loads(text)
        except ValueError as e:
            raise InvalidOverlayException(
                f"overlay file {location!r} is not valid JSON: {e}"
            ) from e
    try:
        yaml: Any = importlib.import_module("yaml")
    except ImportError:
        raise InvalidOverlayException(
            f"overlay file {location!r} is YAML, which needs PyYAML "
            "(pip install PyYAML), or use a .json file"
        ) from None
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(text, Loader=loader)
    except yaml.YAMLError as e:
        detail = " ".join(str(e).split())
        raise InvalidOverlayException(
            f"overlay file {location!r} is not valid YAML: {detail}"
        ) from e


# ---------------------------------------------------------------------- validation


def validate_overlay(
    overlay: dict[str, Any],
    *,
    blocklist: list[str] | None = None,
    forbidden_keys: set[str] | None = None,
    overlay_name: str = "overlay",
    suggestion: str = "",
) -> None:
    """Validate that overlay doesn't contain disallowed keys.

    Schedulers call this before :func:`apply_overlay` so that a user who reaches
    for an overlay where a Role attribute exists (``env``, ``command``), or who
    puts fields in the wrong overlay kind, gets told so instead of a silently
    clobbered request. Operator keys count as the field they act on:
    ``PUT("env")`` is checked as ``env``. Only top-level keys are checked.

    >>> from torchx.specs.overlays import validate_overlay

    >>> # "env" is blocklisted — should be set via Role.env
    >>> try:
    ...     validate_overlay(
    ...         {"env": {"FOO": "bar"}, "nodeSelector": {"gpu": "true"}},
    ...         blocklist=["env", "command"],
    ...         overlay_name="PodSpec",
    ...     )
    ... except ValueError as e:
    ...     "env" in str(e)
    True

    Args:
        overlay: the overlay to check.
        blocklist: keys that must be set through Role/AppDef attributes instead.
        forbidden_keys: keys that belong to a different overlay kind.
        overlay_name: overlay kind named in the error message.
        suggestion: hint appended when ``forbidden_keys`` are found.

    Raises:
        InvalidOverlayException: (a ValueError) naming every offending key.
    """
    _check_overlay(overlay, f"the {overlay_name} overlay")
    fields = [_parse_key(key, "")[1] for key in overlay]
    problems = []
    blocked_keys = set(blocklist or ())
    blocked = sorted({f for f in fields if f in blocked_keys})
    if blocked:
        names = ", ".join(repr(f) for f in blocked)
        problems.append(
            f"{overlay_name} overlay sets {names}, which must be set through the "
            f"Role/AppDef attributes instead; remove {'it' if len(blocked) == 1 else 'them'} "
            "from the overlay"
        )
    forbidden = sorted({f for f in fields if f in (forbidden_keys or set())})
    if forbidden:
        names = ", ".join(repr(f) for f in forbidden)
        message = (
            f"{overlay_name} overlay contains {names}, which belong"
            f"{'s' if len(forbidden) == 1 else ''} to a different overlay type"
        )
        problems.append(f"{message}; {suggestion}" if suggestion else message)
    if problems:
        raise InvalidOverlayException("; ".join(problems))

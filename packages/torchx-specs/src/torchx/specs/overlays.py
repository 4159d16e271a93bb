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
from typing import TYPE_CHECKING, Any

from torchx.specs.overlay_merge import (
    DEL,
    JOIN,
    PUT,
    InvalidOverlayException,
    Overlay,
    apply_overlay,
    check_overlay,
    parse_key,
)

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


# ------------------------------------------------------------------------- storage


def set_overlay(target: AppDef | Role, namespace: str, kind: str, overlay: Overlay) -> None:
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
    check_overlay(overlay, f"the {kind} overlay")
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


def get_overlay(target: AppDef | Role, namespace: str, kind: str) -> Overlay:
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
        return copy.deepcopy(check_overlay(overlay, f"metadata[{namespace!r}][{kind!r}]"))
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
    check_overlay(overlay, f"the {overlay_name} overlay")
    fields = [parse_key(key, "")[1] for key in overlay]
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

"""Custom objects checked against a CRD's schema, as the API server checks them (unit tests).

The server refuses (422) what a CRD's ``openAPIV3Schema`` refuses and silently prunes
fields it does not declare; :func:`validate` refuses both, so a field a request sends
but the CRD would drop fails the test instead of vanishing on a cluster.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def crd_schema(path: Path, version: str | None = None, group: str | None = None) -> dict[str, Any]:
    """The ``openAPIV3Schema`` of ``version`` (default: the storage version) of the CRD in
    ``path`` (of ``group``, if the file holds several)."""
    for doc in yaml.safe_load_all(path.read_text()):
        if not doc or doc.get("kind") != "CustomResourceDefinition":
            continue
        if group is not None and doc["spec"].get("group") != group:
            continue
        versions = doc["spec"]["versions"]
        if version is None:
            [found] = [v for v in versions if v.get("storage")]
        else:
            matching = [v for v in versions if v.get("name") == version]
            if not matching:
                continue
            found = matching[0]
        return dict(found["schema"]["openAPIV3Schema"])
    raise LookupError(f"no CRD {group or ''} {version or ''} in {path}")


def strict(schema: Any) -> Any:
    """The schema with unknown fields refused where it declares properties (as the API
    server prunes them: a field the CRD does not know would be silently lost)."""
    if isinstance(schema, dict):
        out = {k: strict(v) for k, v in schema.items() if not k.startswith("x-kubernetes")}
        if "properties" in schema and not schema.get("x-kubernetes-preserve-unknown-fields"):
            out.setdefault("additionalProperties", False)
        return out
    if isinstance(schema, list):
        return [strict(v) for v in schema]
    return schema


def validate(schema: dict[str, Any], obj: dict[str, Any]) -> None:
    """Raises ``jsonschema.ValidationError`` for what the server would refuse or prune."""
    import jsonschema

    jsonschema.validate(obj, strict(schema), cls=jsonschema.Draft7Validator)

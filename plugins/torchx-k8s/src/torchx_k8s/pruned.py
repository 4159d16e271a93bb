"""Which fields of a pod the API server dropped: a misspelt field caught by a dry run.

A pod overlay with a misspelt field (``resoures``, ``restartPolicyy``) is not refused by
an API server reading it the default way: the field is silently dropped, and the app
runs without what the user asked for. Servers from Kubernetes 1.25 refuse it when asked
(``fieldValidation=Strict``, which the scheduler's dry run always sends; older servers
ignore the parameter). For those older servers, :func:`dropped_fields` compares the pod
sent with the pod the server's dry run answers (the object as it would be stored):
a field sent that is not there was not understood.

The server adds defaults and rewrites values (``4096Mi`` becomes ``4Gi``), so only the
presence of the fields sent is compared, never their values; and a field sent empty
(``""``, ``0``, ``false``, ``[]``, ``{}``, null) may be left out of the answer by a
server that omits empty values, so it never counts as dropped (a misspelt field with an
empty value goes unnoticed: it asked for nothing).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["dropped_fields"]


def dropped_fields(sent: Any, stored: Any, path: str = "") -> list[str]:
    """The paths (``spec.containers[0].resoures``) of the fields in ``sent`` that
    ``stored`` lacks, in the order sent; lists are compared item by item."""
    if isinstance(sent, Mapping) and isinstance(stored, Mapping):
        out: list[str] = []
        for key, value in sent.items():
            where = f"{path}.{key}" if path else str(key)
            if key in stored:
                out += dropped_fields(value, stored[key], where)
            elif not _empty(value):
                out.append(where)
        return out
    if isinstance(sent, list) and isinstance(stored, list):
        out = []
        for index, (item, kept) in enumerate(zip(sent, stored, strict=False)):
            out += dropped_fields(item, kept, f"{path}[{index}]")
        return out
    return []  # a value (rewritten or not): not a question of fields


def _empty(value: Any) -> bool:
    return value is None or value is False or value == 0 or value in ("", [], {})

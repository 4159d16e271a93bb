"""Small shared helpers: owner references, resource quantities, a pod's requests, timestamps."""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal
from typing import Any

from .api import Obj

_SUFFIX: dict[str, int | Decimal] = {
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
    "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"),
    "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
}  # fmt: skip
_QTY = re.compile(
    r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$"
)


def quantity(value: Any) -> Decimal:
    """A resource quantity ("500m", "2", "1Gi", "1e3") as a number of base units."""
    m = _QTY.match(str(value).strip())
    if not m:
        raise ValueError(f"not a quantity: {value!r}")
    number = Decimal(m.group(1))
    return number * Decimal(_SUFFIX[m.group(2)]) if m.group(2) else number


def now() -> str:
    """The current time as the API writes it (RFC 3339, seconds, UTC)."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def owner_ref(obj: Obj, controller: bool = True) -> Obj:
    return {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": obj["metadata"]["name"],
        "uid": obj["metadata"]["uid"],
        "controller": controller,
        "blockOwnerDeletion": True,
    }


def controller_uid(obj: Obj) -> str | None:
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            return str(ref["uid"])
    return None


def owned_by(objs: list[Obj], owner: Obj) -> list[Obj]:
    uid = owner["metadata"]["uid"]
    return [o for o in objs if controller_uid(o) == uid]


def pod_phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def deleting(obj: Obj) -> bool:
    return bool(obj["metadata"].get("deletionTimestamp"))


def merge_diff(old: Any, new: Any) -> Any:
    """A JSON merge patch turning OLD into NEW: keys NEW lacks are set to null (a plain
    merge patch of NEW would keep them, as in a map of counts that lost a key)."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return new
    out = {k: None for k in old if k not in new}
    for k, v in new.items():
        out[k] = merge_diff(old.get(k), v) if k in old else v
    return out


def pod_requests(pod: Obj) -> dict[str, Decimal]:
    """What a pod asks for: the sum over its containers (a request defaults to the limit),
    at least the largest init container's, plus one pod."""

    def of(c: Obj) -> dict[str, Decimal]:
        res = c.get("resources") or {}
        req = {**(res.get("limits") or {}), **(res.get("requests") or {})}
        return {k: quantity(v) for k, v in req.items()}

    spec = pod["spec"]
    total: dict[str, Decimal] = {}
    for c in spec.get("containers") or []:
        for k, v in of(c).items():
            total[k] = total.get(k, Decimal(0)) + v
    for c in spec.get("initContainers") or []:
        for k, v in of(c).items():
            total[k] = max(total.get(k, Decimal(0)), v)
    total["pods"] = Decimal(1)
    return total

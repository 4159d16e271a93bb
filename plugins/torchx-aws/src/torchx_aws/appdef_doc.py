"""The submitted AppDef kept with an AWS job, so that ``describe`` gives it back from any process.

Neither AWS Batch nor SageMaker keeps the AppDef a job was made from, only the request.
Both schedulers write the AppDef's JSON document (:mod:`torchx.specs.appdef_json`) into
a field of the request that AWS returns when the job is described: Batch's ``SubmitJob``
parameter, SageMaker's hyperparameters (split into pieces no longer than a value may
be). It holds nothing the job does not already show in clear: the env is each
container's environment. The run options the job was submitted with go in it too,
masked when written (:func:`torchx.specs.appdef_json.encode`); where they would take
the document over :data:`APPDEF_MAX`, the AppDef is kept without them (``describe``
then gives its roles and no run options), and only an AppDef too large alone is left
out.

>>> from torchx.specs import AppDef, Role
>>> text, why = document(AppDef("app", [Role("w", "img", entrypoint="python")]))
>>> why, read(text).roles[0].entrypoint
('', 'python')
>>> pieces("abcdefg", 3)
['abc', 'def', 'g']
>>> read("{not json") is None
True
>>> text, why = document(AppDef("app", []), {"queue": "q", "big": "x" * APPDEF_MAX})
>>> read_with_options(text)[1], why
({}, '')
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchx.specs import AppDef

__all__ = ["APPDEF_MAX", "document", "pieces", "read", "read_with_options"]

#: The largest AppDef document kept with a job, in bytes of UTF-8 (a fraction of what a
#: Batch ``SubmitJob`` request, 30 KiB, or SageMaker's hyperparameters may hold).
APPDEF_MAX = 8 * 1024


def document(app: AppDef, run_options: Mapping[str, Any] | None = None) -> tuple[str | None, str]:
    """(the AppDef's JSON document to keep with the job, or None; why it is left out).

    With ``run_options`` (masked in it) where they fit, else without them.
    """
    from torchx.specs.appdef_json import encode

    try:
        text = encode(app)
    except Exception as e:  # a value the serializer refuses: the job runs all the same
        return None, f"it cannot be written as JSON ({e})"
    if run_options is not None:
        with_options = encode(app, run_options=run_options)
        if len(with_options.encode("utf-8")) <= APPDEF_MAX:
            return with_options, ""
    size = len(text.encode("utf-8"))
    if size > APPDEF_MAX:
        return None, f"it is {size} bytes, over the {APPDEF_MAX // 1024} KiB kept with a job"
    return text, ""


def pieces(text: str, size: int) -> list[str]:
    """``text`` cut into pieces of at most ``size`` characters, in order."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def read(text: str | None) -> AppDef | None:
    """The AppDef of a document :func:`document` wrote; None: none, or unreadable."""
    return read_with_options(text)[0]


def read_with_options(text: str | None) -> tuple[AppDef | None, dict[str, Any]]:
    """:func:`read`, and the masked run options kept with the AppDef (empty if none)."""
    if not text:
        return None, {}
    from torchx.specs.appdef_json import decode_with_options

    try:
        return decode_with_options(str(text))
    except Exception:  # another tool's value, or a document this release cannot read
        return None, {}

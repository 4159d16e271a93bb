"""The submitted AppDef kept with an AWS job, so that ``describe`` gives it back from any process.

Neither AWS Batch nor SageMaker keeps the AppDef a job was made from, only the request.
Both schedulers write the AppDef's JSON document (:mod:`torchx.specs.appdef_json`) into
a field of the request that AWS returns when the job is described: Batch's ``SubmitJob``
parameter, SageMaker's hyperparameters (split into pieces no longer than a value may
be). It holds nothing the job does not already show in clear: the env is each
container's environment.

>>> from torchx.specs import AppDef, Role
>>> text, why = document(AppDef("app", [Role("w", "img", entrypoint="python")]))
>>> why, read(text).roles[0].entrypoint
('', 'python')
>>> pieces("abcdefg", 3)
['abc', 'def', 'g']
>>> read("{not json") is None
True
"""

from __future__ import annotations

from torchx.specs import AppDef

__all__ = ["APPDEF_MAX", "document", "pieces", "read"]

#: The largest AppDef document kept with a job, in bytes of UTF-8 (a fraction of what a
#: Batch ``SubmitJob`` request, 30 KiB, or SageMaker's hyperparameters may hold).
APPDEF_MAX = 8 * 1024


def document(app: AppDef) -> tuple[str | None, str]:
    """(the AppDef's JSON document to keep with the job, or None; why it is left out)."""
    from torchx.specs.appdef_json import encode

    try:
        text = encode(app)
    except Exception as e:  # a value the serializer refuses: the job runs all the same
        return None, f"it cannot be written as JSON ({e})"
    size = len(text.encode("utf-8"))
    if size > APPDEF_MAX:
        return None, f"it is {size} bytes, over the {APPDEF_MAX // 1024} KiB kept with a job"
    return text, ""


def pieces(text: str, size: int) -> list[str]:
    """``text`` cut into pieces of at most ``size`` characters, in order."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def read(text: str | None) -> AppDef | None:
    """The AppDef of a document :func:`document` wrote; None: none, or unreadable."""
    if not text:
        return None
    from torchx.specs.appdef_json import decode

    try:
        return decode(str(text))
    except Exception:  # another tool's value, or a document this release cannot read
        return None

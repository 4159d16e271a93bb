"""What a replica's ``structured_error_msg`` says, in one line.

``ReplicaStatus.structured_error_msg`` and ``AppStatus.structured_error_msg`` hold the
error a replica left behind, as JSON in the shape of PyTorch's elastic error files (the
file ``TORCHELASTIC_ERROR_FILE`` names, written by ``torch.distributed.elastic``'s
``@record``)::

    {"message": {"message": "ValueError: bad batch on rank 1",
                 "extraInfo": {"py_callstack": "Traceback ...", "timestamp": "1700000000"}}}

Schedulers fill it from that file, or from the last lines the replica wrote to stderr
(``extraInfo.source`` is then ``"stderr"``: see ``torchx.schedulers.helpers.replica_errors``).
Code that shows a status wants the one line a person reads first, the exception;
:func:`error_message` gives it, whatever shape the field has (older torch wrote a bare
string as ``message``; a scheduler may put plain text in the field).

>>> error_message('{"message": {"message": "ValueError: bad batch", "extraInfo": {}}}')
'ValueError: bad batch'
>>> error_message("<NONE>") is None
True
>>> error_message("segfault in worker\\nmore")
'segfault in worker'
"""

from __future__ import annotations

import json

__all__ = ["MAX_MESSAGE", "error_message"]

#: Longest message :func:`error_message` returns (longer ones end in "...").
MAX_MESSAGE = 300

_NONE = "<NONE>"


def error_message(structured_error_msg: str | None) -> str | None:
    """The first line of the error's message, or None when there is no error.

    Long messages are cut to :data:`MAX_MESSAGE` characters.
    """
    if not structured_error_msg or structured_error_msg.strip() in ("", _NONE):
        return None
    data = _load(structured_error_msg)
    text: object = structured_error_msg
    if isinstance(data, dict):
        message = data.get("message")
        if isinstance(message, dict):
            message = message.get("message")
        if isinstance(message, str):
            text = message
    elif isinstance(data, str):
        text = data
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    if not lines:
        return None
    first = lines[0]
    if len(first) > MAX_MESSAGE:
        first = first[: MAX_MESSAGE - 3] + "..."
    return first


def _load(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return None

"""The call and its result where no disk is shared: the role's environment and its log.

On Docker, Kubernetes (Volcano Jobs and AppWrappers), AWS Batch and SageMaker the
replica runs in a container that sees nothing of the submitting machine, so :func:`torchx.functions.submit` sends

- the call in the environment variable ``TORCHX_FN_CALL`` (JSON: the meta, a random
  token, the pickled call in base64), whose size is checked before submitting
  (:func:`check_size`);
- the worker itself as the program: ``python3 -c SOURCE``, SOURCE being the source of
  :mod:`torchx.functions._channel` (standard library only) compressed, so the image
  needs no torchx, only ``python3`` of the submitter's minor version (and cloudpickle
  for a function sent by value);
- on SageMaker, which takes no long argument or environment value, both in pieces of
  the environment joined by a short program (:data:`PIECES`, :data:`BOOT`);

and the replica prints the outcome last on its stdout as frames with a SHA-256 digest
(:func:`torchx.functions._channel.frames`), read back with ``Runner.log_lines`` once the
app has ended (:func:`parse`). A missing or corrupt frame set is no result.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import json
import secrets
import time
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from torchx.functions import _channel
from torchx.functions._channel import CALL_VAR, END, FRAME

#: Schedulers whose calls travel through the role's environment and the replica's log.
LOG_SCHEDULERS = ("docker", "kubernetes", "kubernetes_mcad", "aws_batch", "aws_sagemaker")

#: How long a log may lag behind the app's end, in seconds: AWS Batch's go to CloudWatch
#: Logs, whose reads are eventually consistent, so a log read without the end frame is
#: read again (after 0.5, 1, 2, ... s) for up to this long (SageMaker's training jobs
#: log to CloudWatch Logs too); elsewhere the log is whole
#: once the container has ended.
LATE_LOGS = {"aws_batch": 30.0, "aws_sagemaker": 30.0}

#: The replica's program: the image's ``python3`` (on its ``PATH``).
PYTHON = "python3"

#: The most bytes the call may take in the app (``TORCHX_FN_CALL`` and the worker's
#: source together): 20 KiB, under the lowest limit of these schedulers, AWS Batch's
#: "Maximum job definition size (for RegisterJobDefinition API operations)" of 24 KiB and
#: "Maximum job payload size (for SubmitJob API operations)" of 30 KiB
#: (https://docs.aws.amazon.com/batch/latest/userguide/service_limits.html), leaving room
#: for the rest of the request. The same cap on every log-channel scheduler, so a call
#: that runs on Docker also runs on AWS Batch. SageMaker's CreateTrainingJob takes at
#: most 256 characters per ``ContainerArguments`` item and 512 per ``Environment`` value,
#: 100 values (:data:`PIECES`): there the call and the worker travel in pieces.
CALL_CAP = 20 * 1024

#: Schedulers that take no long argument or environment value: the longest value each
#: takes. SageMaker's CreateTrainingJob ``Environment`` holds at most 100 values of at
#: most 512 characters, and ``ContainerArguments`` items are at most 256 characters
#: (SageMaker API reference: CreateTrainingJob, AlgorithmSpecification). The call and
#: the worker go in values ``TORCHX_FN_C0`` ... and ``TORCHX_FN_W0`` ... (counts in
#: ``TORCHX_FN_CN`` and ``TORCHX_FN_WN``): :data:`CALL_CAP` is at most 44 of them, which
#: leaves 56 for the role's own and the scheduler's; :data:`BOOT` joins them.
PIECES = {"aws_sagemaker": 512}

#: The ``python3 -c`` program where the worker travels in pieces (under 256 characters):
#: it joins the call into ``TORCHX_FN_CALL`` and runs the worker joined from its pieces.
BOOT = (
    "import os,base64,zlib;e=os.environ;"
    "j=lambda p:''.join(e[p+str(i)]for i in range(int(e[p+'N'])));"
    f"e['{CALL_VAR}']=j('TORCHX_FN_C');"
    "exec(zlib.decompress(base64.b64decode(j('TORCHX_FN_W'))))"
)


class CallTooLarge(ValueError):
    """The pickled call is over ``CALL_CAP`` (20 KiB): refused before anything is submitted."""


@functools.cache
def _packed() -> str:
    """:mod:`torchx.functions._channel`'s source and a call of its ``log_main``,
    compressed, in base64. Read at submit time from the installed module."""
    source = Path(_channel.__file__).read_text(encoding="utf-8")
    source += "\nraise SystemExit(log_main())\n"
    return base64.b64encode(zlib.compress(source.encode("utf-8"), 9)).decode("ascii")


def worker_source() -> str:
    """``python3 -c`` program text: the worker, unpacked and run."""
    return f"import base64,zlib;exec(zlib.decompress(base64.b64decode('{_packed()}')))"


def program(scheduler: str, value: str) -> tuple[list[str], dict[str, str]]:
    """The ``python3`` arguments and the role's environment that carry the call ``value``
    (of ``TORCHX_FN_CALL``) on ``scheduler``: whole, or in pieces where it takes no long
    value (:data:`PIECES`)."""
    size = PIECES.get(scheduler)
    if size is None:
        return ["-c", worker_source()], {CALL_VAR: value}
    env: dict[str, str] = {}
    for prefix, text in (("TORCHX_FN_C", value), ("TORCHX_FN_W", _packed())):
        pieces = [text[i : i + size] for i in range(0, len(text), size)]
        env[f"{prefix}N"] = str(len(pieces))
        env.update({f"{prefix}{i}": piece for i, piece in enumerate(pieces)})
    return ["-c", BOOT], env


def call_env(meta: dict[str, Any], payload: bytes) -> tuple[str, str]:
    """``(token, value of TORCHX_FN_CALL)`` for one call."""
    token = secrets.token_hex(8)
    value = json.dumps(
        {"meta": meta, "token": token, "payload": base64.b64encode(payload).decode("ascii")},
        separators=(",", ":"),
    )
    return token, value


def check_size(name: str, value: str, scheduler: str) -> None:
    """:class:`CallTooLarge` in one line when the call and the worker exceed the cap."""
    size = len(value.encode("utf-8")) + len(worker_source())
    if size > CALL_CAP:
        raise CallTooLarge(
            f"the call of {name} takes {size} bytes on {scheduler} ({CALL_VAR} and the"
            f" worker), over the cap of {CALL_CAP}: pass large data by URL (storage the"
            " replica reads) instead of as arguments, or use a scheduler with a shared disk"
            " (local, slurm, lsf)"
        )


def parse(lines: Iterable[str], token: str) -> tuple[bytes | None, bool]:
    """The outcome the frames of ``token`` in ``lines`` carry, and whether any was seen.

    The last complete set wins (a retried replica prints its own); a set with a frame
    missing, out of order, or whose bytes do not match its digest carries nothing. A
    frame may follow other text on its line (a print without a final newline).
    """
    found: bytes | None = None
    seen = False
    chunks: list[str] | None = None
    total = 0
    for raw in lines:
        at = max(raw.find(FRAME), raw.find(END))
        if at < 0:
            continue
        parts = raw[at:].rstrip("\r\n").split(" ")
        if len(parts) != 4 or parts[1] != token:
            continue
        seen = True
        if parts[0] == FRAME:
            seq, _, n = parts[2].partition("/")
            if not (seq.isdigit() and n.isdigit()):
                chunks = None
            elif int(seq) == 0:
                chunks, total = [parts[3]], int(n)
            elif chunks is not None and int(n) == total and int(seq) == len(chunks):
                chunks.append(parts[3])
            else:
                chunks = None
        elif parts[0] == END:
            if chunks is not None and parts[2] == str(total) and len(chunks) == total:
                data = _decode("".join(chunks))
                if data is not None and hashlib.sha256(data).hexdigest() == parts[3]:
                    found = data
            chunks = None
    return found, seen


def _decode(text: str) -> bytes | None:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None


def read(
    lines: Callable[[], Iterable[str]],
    token: str,
    patience: float,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[bytes | None, bool]:
    """:func:`parse` of ``lines()``, read again while it has no outcome, for up to
    ``patience`` seconds (a log that lags behind the app's end)."""
    waited, pause = 0.0, 0.5
    while True:
        found, seen = parse(lines(), token)
        if found is not None or waited >= patience:
            return found, seen
        sleep(pause)
        waited += pause
        pause = min(pause * 2, 8.0)

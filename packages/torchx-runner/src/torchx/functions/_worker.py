"""The replica side of :func:`torchx.functions.submit` on a shared disk:
``python -m torchx.functions._worker DIR``.

Loads ``(fn, args, kwargs)`` from the job directory ``DIR``, calls it and writes the
outcome to ``DIR/result.pkl`` (the format and the logic are
:mod:`torchx.functions._channel`'s, which the log channel runs too). Exit status: 0
when the function returned, 1 when it raised, 3 when the call could not be loaded
(another Python minor version, a module that is not importable here); in that last
case one line on stderr says what was missing, not an unpickling traceback.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from torchx.functions._channel import META, PAYLOAD, RESULT, run, write_atomically


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m torchx.functions._worker JOB_DIR", file=sys.stderr)
        return 2
    job_dir = Path(argv[0])
    meta = json.loads((job_dir / META).read_text())
    code, data = run(meta, (job_dir / PAYLOAD).read_bytes())
    write_atomically(job_dir / RESULT, data)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

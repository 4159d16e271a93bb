"""End to end: a torchrun worker decorated with ``@record`` that raises: its error file is the cause.

torchrun copies the failed worker's error file to the file ``TORCHELASTIC_ERROR_FILE``
names for torchrun itself; the local scheduler points that at the replica's own file and
reads it back, so the status carries torch's own structured error (its traceback
included), not one pieced together from stderr.
"""

from __future__ import annotations

import json

import pytest
from helpers import Cli

try:  # collected only by `nox -s e2e` (TORCHX_E2E=1), which installs torch: never skip
    import torch  # noqa: F401
except ImportError:
    pytest.fail("the e2e tests need torch, which `nox -s e2e` installs", pytrace=False)

RECORDED = """\
import os

from torch.distributed.elastic.multiprocessing.errors import record


@record
def main() -> None:
    rank = int(os.environ["RANK"])
    if rank == 1:
        raise ValueError(f"bad batch on rank {rank}")


main()
"""


def test_a_recorded_workers_error_file_is_the_cause(cli: Cli) -> None:
    (cli.work / "rec.py").write_text(RECORDED)
    proc = cli("run", "--wait", "dist.ddp", "-j", "1x2", "--script", "rec.py", rc=1, timeout=300)
    handle = proc.stdout.strip().splitlines()[-1]
    assert "Error: ValueError: bad batch on rank 1" in proc.stderr.splitlines(), proc.stderr
    data = json.loads(cli("status", "--json", handle).stdout)["data"]["status"]
    rep = data["roles"][0]["replicas"][0]
    for error in (rep["structured_error_msg"], data["structured_error_msg"]):
        message = error["message"]  # an object, not JSON in a string
        assert message["message"] == "ValueError: bad batch on rank 1"
        # torch's record, not the stderr fallback's
        assert "source" not in message["extraInfo"], message
        assert (
            'raise ValueError(f"bad batch on rank {rank}")' in message["extraInfo"]["py_callstack"]
        )

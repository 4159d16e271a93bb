"""End to end: a torchrun job whose rank 1 raises says so, not only "exited with code 1".

torchrun prints the worker's traceback (prefixed with its local rank) and then its own
``ChildFailedError`` summary; the status must show the worker's exception.
"""

from __future__ import annotations

import json

import pytest
from helpers import Cli

try:  # collected only by `nox -s e2e` (TORCHX_E2E=1), which installs torch: never skip
    import torch  # noqa: F401
except ImportError:
    pytest.fail("the e2e tests need torch, which `nox -s e2e` installs", pytrace=False)

BAD = """\
import os

rank = int(os.environ["RANK"])
if rank == 1:
    raise ValueError(f"bad batch on rank {rank}")
"""


@pytest.mark.parametrize(("j", "failed"), [("1x2", "bad/0"), ("2x1", "bad/1")])
def test_ddp_rank_raising_is_the_cause_in_wait_status_and_json(
    cli: Cli, j: str, failed: str
) -> None:
    """-j 1x2: rank 1 is the one node's second worker; -j 2x1: the second node's only one.
    Either way torchrun's "Root Cause" block names rank 1, whose traceback is the cause."""
    (cli.work / "bad.py").write_text(BAD)
    proc = cli("run", "--wait", "dist.ddp", "-j", j, "--script", "bad.py", rc=1, timeout=300)
    handle = proc.stdout.strip().splitlines()[-1]
    assert "Error: ValueError: bad batch on rank 1" in proc.stderr.splitlines(), proc.stderr
    assert f"See its log: torchx log {handle}/{failed}" in proc.stderr.splitlines()
    status = cli("status", handle).stdout
    assert "error=ValueError: bad batch on rank 1" in status
    assert "error=====" not in status
    data = json.loads(cli("status", "--json", handle).stdout)["data"]["status"]
    message = data["structured_error_msg"]["message"]  # an object, not JSON in a string
    assert message["message"] == "ValueError: bad batch on rank 1"
    assert message["extraInfo"]["location"] == "bad.py:5"
    assert message["extraInfo"]["rank"] == "1"  # read from torchrun's Root Cause block

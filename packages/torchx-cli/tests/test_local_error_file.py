"""A local replica's elastic error file is its failure's cause in run --wait, status and --json.

The local scheduler points each replica's ``TORCHELASTIC_ERROR_FILE`` at a file of its
own and reads it back (what ``torchrun`` and ``@record`` entry points write there). The
program here writes it as ``@record`` does, then fails with a misleading last stderr
line: the error file, not stderr, must be what ``torchx`` shows.
"""

from __future__ import annotations

import json

from helpers import Cli

RECORD = """\
import json, os, sys

error = {"message": {"message": "ValueError: bad batch on rank 1",
                     "extraInfo": {"py_callstack": "Traceback ...", "timestamp": "1"}}}
with open(os.environ["TORCHELASTIC_ERROR_FILE"], "w") as f:
    json.dump(error, f)
print("shutting down", file=sys.stderr)
sys.exit(1)
"""


def test_the_error_file_is_the_cause_in_wait_status_and_json(cli: Cli) -> None:
    (cli.work / "record.py").write_text(RECORD)
    proc = cli("run", "--wait", "utils.python", "--script", "record.py", rc=1)
    handle = proc.stdout.strip().splitlines()[-1]
    assert "Error: ValueError: bad batch on rank 1" in proc.stderr.splitlines(), proc.stderr
    assert "shutting down" not in proc.stderr  # stderr's last line is not the cause

    status = cli("status", handle)
    assert "Error: ValueError: bad batch on rank 1" in status.stdout.splitlines()

    data = json.loads(cli("status", "--json", handle).stdout)["data"]["status"]
    rep = data["roles"][0]["replicas"][0]
    for error in (rep["structured_error_msg"], data["structured_error_msg"]):
        message = error["message"]  # an object, not JSON in a string
        assert message["message"] == "ValueError: bad batch on rank 1"
        assert message["extraInfo"] == {"py_callstack": "Traceback ...", "timestamp": "1"}

"""What an HPC user expects of ``list`` and of paths: finished jobs stay listed, and a
``job_dir`` in ``.torchxconfig`` does not change what relative paths name."""

from __future__ import annotations

import json
import time

from slurmcmd import slurm

from torchx.schedulers.testing.cli import TorchxCli
from torchx.schedulers.testing.cli import app_id as job_id

FINAL = {"SUCCEEDED", "FAILED", "CANCELLED"}


def _listed(cli: TorchxCli, *cfg: str) -> dict[str, dict[str, str]]:
    out = json.loads(cli("list", "-s", "slurm", *cfg, "--json").stdout)
    assert out["kind"] == "AppList", out
    return {a["handle"]: a for a in out["data"]}


def test_list_keeps_jobs_that_left_the_queue(cli: TorchxCli) -> None:
    submitted = time.time()
    handle = cli.start("utils.echo", "--msg", "listed", "--num_replicas", "2")
    status = cli.wait_state(handle, FINAL)
    assert status["state"] == "SUCCEEDED"
    # the times Slurm has (whole seconds, local time): the job ran after its submission
    assert submitted - 1 <= status["start_time"] <= status["end_time"] <= time.time() + 1, status
    jid = job_id(handle)
    # MinJobAge is 10 s on this cluster; slurmctld forgets the job at its next purge
    deadline = time.monotonic() + 150
    while slurm("squeue", "-h", "-t", "all", "-o", "%A").split().count(jid):
        assert time.monotonic() < deadline, f"job {jid} still in squeue"
        time.sleep(1)
    listed = _listed(cli)
    assert handle in listed, listed
    assert listed[handle]["state"] == "SUCCEEDED", listed[handle]
    assert listed[handle]["name"].startswith("echo-"), listed[handle]  # the job's name
    # from accounting now: the same times (its leader's; the components ended together,
    # to within Slurm's second)
    for key in ("start_time", "end_time"):
        assert abs(listed[handle][key] - status[key]) <= 1, (key, listed[handle], status)
    # one app per heterogeneous job: its other component's id is no app of its own
    component = handle.rsplit("/", 1)[0] + f"/{int(jid) + 1}"
    assert component not in listed, listed
    # a bound after its end leaves it out (it ended 10 s or more ago); a bad bound is
    # one clear line
    later = _listed(cli, "-cfg", "list_since=2s")
    assert handle not in later, later
    bad = cli("list", "-s", "slurm", "-cfg", "list_since=yesterday", rc=2)  # a usage error
    assert "run option 'list_since'='yesterday' is not a duration or a date" in bad.stderr


def test_relative_paths_name_files_of_the_submit_directory_with_job_dir_set(cli: TorchxCli) -> None:
    (cli.work / ".torchxconfig").write_text("[slurm]\njob_dir = jobs\n")
    (cli.work / "data").mkdir()
    (cli.work / "data" / "msg.txt").write_text("read from the submit directory\n")
    proc = cli("run", "-s", "slurm", "--log", "utils.sh", "cat", "data/msg.txt", timeout=180)
    assert "read from the submit directory" in proc.stdout, proc.stdout + proc.stderr
    assert "SUCCEEDED" in proc.stderr, proc.stderr
    handle = proc.stdout.strip().splitlines()[0]
    # the logs went to the job directory of .torchxconfig
    assert list((cli.work / "jobs").glob(f"slurm-{job_id(handle)}-sh-0.out")), handle

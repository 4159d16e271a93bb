"""``bsub``: records a job and starts its supervisor.

``bsub [options] command [args]``, or the job file on stdin, with the options IBM
documents that the torchx ``lsf`` scheduler uses (``-J -P -q -n -R -gpu -cwd -outdir
-o -oo -e -eo -w -m -Q``); answers ``Job <ID> is submitted to default queue <normal>.``
Job ids count up from ``next_id``.
"""

from __future__ import annotations

import getpass
import os
import sys
import time

from standin_rules import expand, parse_depend, parse_requeue
from standin_state import DIR, JOBS, conf, die, exec_hosts, host, locked, save
from standin_supervisor import spawn_supervisor

_BSUB_VALUE = {
    "-J": "name", "-P": "project", "-q": "queue", "-n": "slots", "-R": "res_req",
    "-gpu": "gpu", "-cwd": "cwd", "-outdir": "outdir", "-o": "out", "-oo": "out_over",
    "-e": "err", "-eo": "err_over", "-w": "depend", "-m": "hosts", "-Q": "requeue",
}  # fmt: skip


def bsub(argv: list[str]) -> None:
    cfg = conf()
    opts: dict[str, str] = {}
    rest: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in _BSUB_VALUE:
            if i + 1 >= len(argv):
                die(f"{arg}: Option requires an argument. Job not submitted.")
            opts[_BSUB_VALUE[arg]] = argv[i + 1]
            i += 2
        elif arg.startswith("-") and not rest:
            die(f"{arg}: Illegal option. Job not submitted.")
        else:
            rest = argv[i:]
            break
    queues = cfg.get("TORCHX_DEV_LSF_QUEUES", "normal").split()
    queue = opts.get("queue", queues[0])
    if queue not in queues:
        die(f"{queue}: No such queue. Job not submitted.")
    slots = opts.get("slots", "1")
    if not slots.isdigit() or int(slots) < 1:
        die(f"{slots}: Bad argument for option -n. Job not submitted.")
    for name in opts.get("hosts", "").split():
        if name not in exec_hosts():
            die(f"{name}: Bad host name, host group name or cluster name. Job not submitted.")
    if rest:
        jobfile = " ".join(rest) + "\n"  # LSF runs the command line with the user's shell
        command = " ".join(rest)
    else:
        jobfile = sys.stdin.read()
        command = next((x for x in jobfile.splitlines() if x and not x.startswith("#")), "")
    requeue = opts.get("requeue", "")
    if requeue and parse_requeue(requeue) is None:
        die(f"{requeue}: Bad requeue exit values for option -Q. Job not submitted.")
    depend = opts.get("depend")
    if depend is not None and parse_depend(depend) is None:
        die(f"{depend}: Syntax error in dependency condition. Job not submitted.")
    with locked():
        counter = os.path.join(DIR, "next_id")
        try:
            with open(counter) as f:
                job_id = int(f.read().strip() or "1")
        except (OSError, ValueError):
            job_id = 1
        with open(counter, "w") as f:
            f.write(str(job_id + 1))
        os.makedirs(os.path.join(JOBS, str(job_id)), mode=0o700)
        with open(os.path.join(JOBS, str(job_id), "jobfile"), "w") as f:
            f.write(jobfile)
        job = {
            "id": job_id,
            "name": opts.get("name") or command[:100],
            "project": opts.get("project") or cfg.get("TORCHX_DEV_LSF_DEFAULT_PROJECT", "default"),
            "queue": queue,
            "user": getpass.getuser(),
            "slots": int(slots),
            "cwd": expand(opts.get("cwd") or os.getcwd(), job_id),
            "outdir": expand(opts.get("outdir", ""), job_id),
            "out": expand(opts.get("out_over") or opts.get("out") or "", job_id),
            "out_append": "out_over" not in opts,
            "err": expand(opts.get("err_over") or opts.get("err") or "", job_id),
            "err_append": "err_over" not in opts,
            "depend": depend,
            "res_req": opts.get("res_req", ""),
            "hosts": opts.get("hosts", ""),
            "gpu": opts.get("gpu", ""),
            "requeue": requeue,
            "attempt": 0,
            "env": dict(os.environ),
            "stat": "PEND",
            "exit_code": None,
            "exec_host": "",
            "from_host": host(),
            "submit_time": time.time(),
            "start_time": None,
            "finish_time": None,
            "pgid": None,
            "kill": None,
        }
        save(job)
    spawn_supervisor(job_id)
    where = f"queue <{queue}>" if "queue" in opts else f"default queue <{queue}>"
    print(f"Job <{job_id}> is submitted to {where}.")

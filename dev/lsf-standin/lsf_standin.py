#!/usr/bin/env python3
"""A stand-in for IBM Spectrum LSF's bsub, bjobs, bkill and brequeue: jobs run here.

LSF cannot be installed here (it is not free software and has no Debian package), so
``dev/lsf up`` copies this program and its modules (``standin_*.py``, next to it) into
``$TORCHX_DEV_LSF_DIR/lib`` and puts it on PATH as ``bsub``, ``bjobs``, ``bkill`` and
``brequeue`` (one small wrapper each). It implements the documented subset the torchx
``lsf`` scheduler uses, with the options and output formats IBM documents for them;
every difference from real LSF is listed in dev/README.md ("dev/lsf").

This module only picks the command; each has a module of its own, and they import one
way, down this list: :mod:`standin_bsub`, :mod:`standin_bjobs` and
:mod:`standin_control` (bkill, brequeue), then :mod:`standin_supervisor` (one detached
process per job run: ``lsf_standin.py _run JOBID ATTEMPT``), :mod:`standin_rules`
(LSF's decisions: dispatch, dependencies, requeue) and :mod:`standin_state` (the
configuration, the job records and their lock). Standard library only.
"""

from __future__ import annotations

import os
import sys
import time

from standin_state import die, load, locked, purge, save


def main() -> None:
    """Runs the command the program was started as (or named first): each in its module."""
    tool = os.path.basename(sys.argv[0])
    args = sys.argv[1:]
    if tool.endswith(".py"):  # python lsf_standin.py TOOL ARGS
        if not args:
            die("usage: lsf_standin.py bsub|bjobs|bkill|brequeue|_run ARGS", 2)
        tool, args = args[0], args[1:]
    if tool == "_run":
        from standin_supervisor import supervise

        try:
            supervise(int(args[0]), int(args[1]) if len(args) > 1 else 0)
        except BaseException:
            # a stand-in failure must not leave the job PEND or RUN forever: it ends as EXIT
            with locked():
                job = load(int(args[0]))
                if job and job["stat"] in ("PEND", "RUN"):
                    job.update(stat="EXIT", exit_code=1, finish_time=time.time())
                    save(job)
            raise
    elif tool == "_purge":
        purge()
    elif tool == "bsub":
        from standin_bsub import bsub

        bsub(args)
    elif tool == "bjobs":
        from standin_bjobs import bjobs

        bjobs(args)
    elif tool in ("bkill", "brequeue"):
        import standin_control

        getattr(standin_control, tool)(args)
    else:
        die(f"{tool}: not a command of the LSF stand-in (bsub, bjobs, bkill, brequeue)", 2)


if __name__ == "__main__":
    main()

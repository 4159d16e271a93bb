"""The first steps of a local app's supervisor process, before its modules are imported.

``LocalScheduler`` starts ``python -S -c "<answer ok>; ...boot.start()" APP_DIR``. Two
steps of the supervisor's start (see :mod:`torchx.schedulers.local.supervisor`) are
taken here, at once, so that they overlap the imports and reading of the request that
follow instead of coming after them:

1. fork the watchdog (first: a forked child gets only the forking thread, and the
   watchdog must stay outside the app's cgroup), which runs
   :func:`~torchx.schedulers.local.watchdog.watch`: it imports nothing until the
   supervisor is gone (it would compete for the CPU with the start);
2. when the ``cgroup`` run option asks for one (``--cgroup`` after the app directory),
   start moving into the app's cgroup in a thread (:func:`cgroup.enter`), which can wait
   tens of milliseconds in the kernel (an RCU grace period when no cgroup migration
   happened lately): measured, that was the largest single delay before the first
   replica started.

Then :func:`torchx.schedulers.local.supervisor.entry` runs the supervisor with both.
Only ``os``, ``sys`` and ``_thread`` are imported before the fork.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def start() -> None:
    """Forks the watchdog, starts entering the cgroup, then runs the supervisor."""
    app_dir = sys.argv[1]
    parent = os.getpid()
    wd_read, wd_write = os.pipe()  # both close-on-exec: replicas never hold them
    watchdog = os.fork()
    if watchdog == 0:
        os.close(wd_write)
        from torchx.schedulers.local.watchdog import watch

        watch(app_dir, wd_read, parent)  # never returns
    os.close(wd_read)

    import _thread

    entered = _thread.allocate_lock()
    box: list[Any] = []
    if "--cgroup" in sys.argv[2:]:  # the cgroup run option
        entered.acquire()

        def enter() -> None:
            try:
                from torchx.schedulers.local import cgroup

                box.append(cgroup.enter(os.path.basename(app_dir)))
            finally:
                entered.release()

        _thread.start_new_thread(enter, ())
    from torchx.schedulers.local.supervisor import Early, entry

    entry(Early(watchdog, wd_write, entered, box))

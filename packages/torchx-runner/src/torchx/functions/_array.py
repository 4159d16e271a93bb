""":func:`torchx.functions.map_array` on Slurm: one native job array, one app.

The N calls share one job directory (``torchx-fn-*``) with one sub-directory per item
(``0`` ... ``N-1``: ``meta.json`` and ``payload.pkl`` in, ``result.pkl`` out); one app
of one role of N replicas is submitted with the Slurm run option
``array_parallelism=K``, which makes it one ``sbatch --array=0-(N-1)%K`` job: Slurm
itself runs at most K items at once, and replica ``i`` (array task ``i``, whose
``replica_id`` macro is ``SLURM_ARRAY_TASK_ID``) runs the worker on sub-directory ``i``.

One thread follows the app with one ``Runner.status`` per poll (one describe of the
whole array, never one per item) and settles each item's future as soon as its own
replica (array task) has ended, in any order; the futures are returned in the items'
order. Each future's ``handle`` is the app's; ``torchx log HANDLE/fn/I`` shows item
``I``'s output. Cancelling one future cancels its array task alone (``scancel
JOBID_I``, through the handle ``HANDLE_I``); the others run on.
"""

from __future__ import annotations

import concurrent.futures
import json
import shutil
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

# the package is initialised first: this module is imported by its map_array only
from torchx.functions import AppFuture, NoResult, _jobdir
from torchx.functions._channel import META, PAYLOAD, RESULT

if TYPE_CHECKING:
    from torchx.functions import _Target
    from torchx.specs import AppStatus, CfgVal

T = TypeVar("T")

#: The shortest and longest wait between two polls of the array's status (seconds):
#: sooner again after a poll that saw an item end, as items tend to end in bursts.
MIN_INTERVAL = 0.2
MAX_INTERVAL = 2.0


def _replica_states(status: AppStatus) -> dict[int, tuple[str, int | None]]:
    """Each replica's state name and exit code, by replica id (the item's index)."""
    return {
        rep.id: (rep.state.name, rep.exit_code) for role in status.roles for rep in role.replicas
    }


def map_slurm_array(
    fn_name: str,
    payloads: list[bytes],
    parallelism: int,
    target: _Target,
    app_name: str,
    role_name: str,
    default_mem_mb: int,
) -> list[AppFuture[Any]]:
    """Submits ``payloads`` as one job array; returns one future per item, in order."""
    from torchx.runner.api import get_runner
    from torchx.specs import AppDef, Resource, Role, macros

    assert target.parent is not None  # Slurm: the job directory is on a shared disk
    job_dir = _jobdir.make(target.parent)
    try:
        meta = json.dumps({"python": list(sys.version_info[:2]), "sys_path": list(sys.path)})
        for index, data in enumerate(payloads):
            # written before the job exists: no reader can see half a file, and close()
            # is what makes them visible to the nodes of a shared disk
            item = job_dir / str(index)
            item.mkdir(mode=0o700)
            (item / META).write_text(meta)
            (item / PAYLOAD).write_bytes(data)
        role = Role(
            name=role_name,
            image=target.image,
            entrypoint=sys.executable,
            args=["-m", "torchx.functions._worker", f"{job_dir}/{macros.replica_id}"],
            num_replicas=len(payloads),
            resource=target.resource or Resource(cpu=1, gpu=0, memMB=default_mem_mb),
        )
        cfg: dict[str, CfgVal] = dict(target.cfg or {})
        cfg["array_parallelism"] = parallelism
        with get_runner() as runner:
            handle = str(runner.run(AppDef(name=app_name, roles=[role]), "slurm", cfg=cfg))
    except BaseException:
        shutil.rmtree(job_dir, ignore_errors=True)
        raise
    futures: list[ArrayItemFuture[Any]] = [
        ArrayItemFuture(handle, job_dir / str(i), i, role_name) for i in range(len(payloads))
    ]
    watch = threading.Thread(
        target=_follow,
        args=(handle, job_dir, futures),
        name=f"torchx.functions array {fn_name} {handle}",
        daemon=True,
    )
    for future in futures:
        future._watcher = watch  # the one thread following them all
    watch.start()
    return list(futures)


def _follow(handle: str, job_dir: Path, futures: list[ArrayItemFuture[Any]]) -> None:
    """Settles each item's future when its replica has ended, from the app's status."""
    from torchx.runner.api import get_runner

    open_items = list(futures)
    interval = MIN_INTERVAL
    wake = threading.Event()
    try:
        with get_runner() as runner:
            while open_items:
                status = runner.status(handle)
                if status is None:
                    for future in open_items:
                        future._settle_item(
                            "UNKNOWN", None, "the scheduler no longer knows the app"
                        )
                    break
                states = _replica_states(status)
                still = []
                for future in open_items:
                    state, code = states.get(future.index, ("", None))
                    if state in ("SUCCEEDED", "FAILED", "CANCELLED"):
                        future._settle_item(state, code)
                    elif status.is_terminal():  # ended without saying so of this item
                        future._settle_item(status.state.name, None)
                    else:
                        still.append(future)
                ended_some = len(still) < len(open_items)
                open_items = [f for f in still if not f.done()]
                if not open_items:
                    break
                interval = MIN_INTERVAL if ended_some else min(interval * 1.5, MAX_INTERVAL)
                wake.wait(interval)  # a pause between polls, nothing waits on it
    except BaseException as e:  # never leave a future pending forever
        for future in open_items:
            with future._settle_lock:
                if not future.done():
                    future.set_exception(e)
    finally:
        shutil.rmtree(job_dir, ignore_errors=True)


class ArrayItemFuture(AppFuture[T]):
    """The future of one item of a :func:`map_array` job array on Slurm.

    ``handle`` is the array app's (the same for every item), ``index`` the item's
    replica id: ``torchx log HANDLE/ROLE/INDEX`` shows what it printed. :meth:`cancel`
    cancels its array task alone.
    """

    def __init__(self, handle: str, job_dir: Path, index: int, role: str) -> None:
        super().__init__(handle, job_dir)
        self.index = index
        self.role = role

    def __repr__(self) -> str:
        return f"<ArrayItemFuture {self.handle}/{self.role}/{self.index} {self._state.lower()}>"

    def cancel(self) -> bool:
        """Cancels this item's array task (``scancel JOBID_INDEX``); True unless the item
        had already ended. The other items run on."""
        from torchx.runner.api import get_runner

        with self._settle_lock:
            if self.done():
                return self.cancelled()
            with get_runner() as runner:
                status = runner.status(str(self.handle))
                state = _replica_states(status).get(self.index) if status is not None else None
                if status is None or (state and state[0] in ("SUCCEEDED", "FAILED", "CANCELLED")):
                    return False  # ended: the watcher is settling it with the outcome
                runner.cancel(f"{self.handle}_{self.index}")
            return concurrent.futures.Future.cancel(self)

    def _settle_item(self, state: str, exit_code: int | None, detail: str = "") -> None:
        """The outcome from the item's ``result.pkl``, else NoResult naming its replica."""
        with self._settle_lock:
            if self.done() or self.job_dir is None:  # cancelled meanwhile
                return
            path = self.job_dir / RESULT
            data = path.read_bytes() if path.exists() else None
            shutil.rmtree(self.job_dir, ignore_errors=True)
            if data is None:
                where = f"{self.handle}/{self.role}/{self.index}"
                self.set_exception(NoResult(where, state, exit_code, detail))
                return
            self._set_outcome(data)

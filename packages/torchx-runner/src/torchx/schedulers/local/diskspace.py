"""The supervisor's guard against a full disk: the reserve, the checks, the last write.

While an app runs its supervisor keeps :data:`RESERVE` bytes allocated in ``.reserve``.
When a replica fails, when indexing its output fails with ENOSPC, and every
:data:`SPACE_CHECK` seconds while a replica prints, it looks at the free space of the
filesystems the app writes to (and at the log files against ``ulimit -f``). A full one
fails the app (:meth:`DiskSpace.on_no_space`): what the replicas print can no longer be
kept. :func:`write_state_file` then writes the final state in the room the reserve gives
back. Standard library only: the supervisor starts for every app.
"""

from __future__ import annotations

import errno
import os

from torchx.schedulers.local.state import NO_SPACE, write_all, write_json_atomic

TYPE_CHECKING = False  # typing costs every supervisor start milliseconds
if TYPE_CHECKING:
    from typing import Any

    from torchx.schedulers.local.replicas import Replica

#: Seconds between two looks at the free space of the filesystems the app writes to.
SPACE_CHECK = 0.2
#: Bytes kept allocated in ``.reserve`` while the app runs (plus some per replica), given
#: back when the disk is full so that the final state can still be written.
RESERVE = 64 << 10
#: A filesystem with less free space than this is full (what is left comes and goes as
#: records are replaced, and is no room for logs anyway).
FULL_BELOW = 64 << 10
RESERVE_PER_REPLICA = 512


class DiskSpace:
    """The disk-full side of :class:`~torchx.schedulers.local.supervisor.Supervisor`."""

    app_dir: str
    reserve_path: str
    watched: list[str]
    replicas: list[Replica]
    fsize_limit: int | None
    no_space: bool
    final: str | None
    msg: str
    to_relaunch: list[Replica]
    dirty: bool

    def begin_stop(self, reps: list[Replica]) -> None:
        raise NotImplementedError  # the supervisor's (ReplicaProcesses)

    def make_reserve(self) -> None:
        """Allocates ``.reserve``, the room the final state is written in if the disk fills."""
        size = RESERVE + RESERVE_PER_REPLICA * len(self.replicas)
        try:
            fd = os.open(self.reserve_path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                write_all(fd, bytes(size))
            finally:
                os.close(fd)
        except OSError as e:
            if e.errno not in NO_SPACE:
                raise
            self.on_no_space(self.app_dir, e)

    def full_path(self) -> str | None:
        """A directory the app writes to whose filesystem is full (< :data:`FULL_BELOW` free)."""
        root = os.geteuid() == 0  # root may use the blocks reserved for it
        for path in self.watched:
            try:
                st = os.statvfs(path)
            except OSError:
                continue
            if (st.f_bfree if root else st.f_bavail) * st.f_frsize < FULL_BELOW:
                return path
        return None

    def check_space(self, reps: list[Replica]) -> bool:
        """Fails the app if a filesystem it writes to is full, or a log reached ``ulimit -f``."""
        full = self.full_path()
        if full is not None:
            self.on_no_space(full)
            return True
        if self.fsize_limit is None:
            import resource

            soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
            self.fsize_limit = soft if soft != resource.RLIM_INFINITY else 0
        if self.fsize_limit:
            for rep in reps:
                for path in (rep.out_path, rep.err_path):
                    try:
                        size = os.stat(path).st_size
                    except OSError:
                        continue
                    if size >= self.fsize_limit:
                        self.on_no_space(path, OSError(errno.EFBIG, "File too large (ulimit -f)"))
                        return True
        return False

    def on_no_space(self, path: str, err: OSError | None = None) -> None:
        """Fails the app: what its replicas write can no longer be kept (disk full)."""
        if self.no_space:
            return
        self.no_space = True
        code = (err.errno if err is not None else None) or errno.ENOSPC
        what = "file size limit reached" if code == errno.EFBIG else "disk full"
        why = (err.strerror if err is not None else None) or os.strerror(code)
        msg = (
            f"{what}: {why} on the filesystem of {path}; the app was stopped "
            "(its logs lack what could not be written)"
        )
        if self.final is None:
            self.msg = msg
            self.final = "FAILED"
            self.to_relaunch = []
            self.begin_stop(self.replicas)
        else:
            self.msg = f"{self.msg}; {msg}" if self.msg else msg
        self.dirty = True


def write_state_file(app_dir: str, state: dict[str, Any]) -> None:
    """Writes a final state, whatever it takes: in the room of ``.reserve``, else in place.

    ``.reserve`` goes first (before the record says the app ended, so nothing of the app
    changes after that): on a full disk, the room it gives back is what the atomic write
    (a new file) needs. As a last resort the record is overwritten in place (a reader may
    then see it torn for a moment, which beats a record that says RUNNING forever).
    """
    path = os.path.join(app_dir, "state.json")
    _remove(os.path.join(app_dir, ".reserve"))
    try:
        write_json_atomic(path, state)
        return
    except OSError as e:
        if e.errno not in NO_SPACE:
            raise
    import json

    payload = json.dumps(state, separators=(",", ":")).encode()
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        write_all(fd, payload)
        os.ftruncate(fd, len(payload))
    finally:
        os.close(fd)


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass

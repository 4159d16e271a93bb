"""A cgroup (v2) per local app (the ``cgroup`` run option), where the supervisor may make
one: nothing the app started outlives it, whatever it did to escape.

The supervisor is a child subreaper, so while it lives every orphan of the app comes
back to it, and it kills what is left when the app ends. When the supervisor itself is
killed (``kill -9``), its watchdog kills the app's processes it can prove are the app's:
the replicas' sessions, and any process whose environment carries ``TORCHX_APP_ID``.
A process that left its session *and* cleared its environment (``env -i setsid ...``)
escapes that proof. A cgroup does not: membership is inherited by every process forked
inside it and cannot be dropped without write access to another cgroup.

So with the ``cgroup`` run option the supervisor, once its watchdog is forked (the
watchdog must stay outside), makes ``torchx-<app_id>`` below its own cgroup in the
unified (v2) hierarchy and moves itself into it; the replicas it starts are born inside. The path is recorded in ``state.json``
(``"cgroup"``). When the supervisor has exited, for any reason, the watchdog (which
finds the cgroup by its name, even if the app's records were deleted meanwhile) kills
everything still in that cgroup (``cgroup.kill``, or SIGKILL to each member on kernels
before 5.14) and removes it; a reader that settles an app whose watchdog died too does
the same.

*Where available*: the unified hierarchy must be mounted and this user must be allowed
to create a cgroup below its own and move into it (root outside a container, or a
delegated subtree). Anywhere else (the usual unprivileged user, most containers) it is
not used: nothing fails, ``"cgroup"`` is recorded as null, and the proofs above are all
there is. No controller is enabled: the cgroup limits nothing.

Why an option, off by default: moving a process between cgroups makes the kernel wait
for an RCU grace period (10 to 30 ms here), and process creation everywhere takes a
slower path for a moment after; starting 128 replicas took about 15 ms longer.

Standard library only: the supervisor and its watchdog import this.
"""

from __future__ import annotations

import errno
import os
import time

#: signal.SIGKILL (this module is Linux-only): importing signal costs enum, on the path
#: of every app's start (see boot)
SIGKILL = 9

#: The name of an app's cgroup is this prefix followed by its app id.
PREFIX = "torchx-"


def _unified_mount() -> str | None:
    """Where the cgroup v2 (unified) hierarchy is mounted, None if it is not."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                fields = line.split()
                try:
                    sep = fields.index("-")
                except ValueError:
                    continue
                if len(fields) > sep + 1 and fields[sep + 1] == "cgroup2":
                    return fields[4].replace("\\040", " ")
    except OSError:
        pass
    return None


def _own_path() -> str | None:
    """This process's cgroup in the unified hierarchy (``/`` for the root one)."""
    try:
        with open("/proc/self/cgroup", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("0::"):
                    return line[3:].rstrip("\n")
    except OSError:
        pass
    return None


def path_for(app_id: str) -> str | None:
    """Where :func:`enter`, called from this process's cgroup, makes the app's cgroup.

    The watchdog, forked by the supervisor before it moved, finds it so, whether or not
    the app's records are still there to say it.
    """
    mount, own = _unified_mount(), _own_path()
    if mount is None or own is None or " (deleted)" in own:
        return None
    return os.path.join(mount, own.lstrip("/"), PREFIX + app_id)


def enter(app_id: str) -> str | None:
    """Makes the app's cgroup and moves this process into it; its path, or None.

    None when cgroups are not available to this user here (see the module docstring):
    nothing is left behind then.
    """
    path = path_for(app_id)
    if path is None:
        return None
    try:
        os.mkdir(path, 0o755)
    except OSError:
        return None
    try:
        _write(os.path.join(path, "cgroup.procs"), str(os.getpid()))
    except OSError:
        _rmdir(path)
        return None
    return path


def is_app_cgroup(path: object, app_id: str) -> bool:
    """True if ``path`` can be the cgroup :func:`enter` made for ``app_id`` on this host.

    A record names the cgroup whose members get killed: only a directory of the app's
    own name in the unified hierarchy qualifies, whatever the record says.
    """
    if not isinstance(path, str) or os.path.basename(path) != PREFIX + app_id:
        return False
    mount = _unified_mount()
    if mount is None or os.path.realpath(path) != path:
        return False
    return path.startswith(mount.rstrip("/") + "/")


def members(path: str) -> list[int]:
    """The pids in the cgroup (empty if it is gone)."""
    try:
        with open(os.path.join(path, "cgroup.procs"), encoding="ascii") as f:
            return [int(x) for x in f.read().split()]
    except (OSError, ValueError):
        return []


def kill(path: str) -> None:
    """SIGKILLs every process in the cgroup (and whatever they fork meanwhile)."""
    try:
        _write(os.path.join(path, "cgroup.kill"), "1")
        return
    except FileNotFoundError:
        if not os.path.isdir(path):
            return  # gone: nothing in it
    except OSError:
        pass
    me = os.getpid()
    for _ in range(100):  # no cgroup.kill (Linux < 5.14): member by member, until none
        pids = [pid for pid in members(path) if pid != me]
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, SIGKILL)
            except OSError:
                pass


def remove(path: str, timeout: float = 5.0) -> bool:
    """Kills what is left in the app's cgroup and removes it; False if it stayed.

    A killed process leaves its cgroup only once it has exited, a moment after the
    signal: ``cgroup.events`` says when the cgroup is empty (``populated 0``, with a
    notification that ``poll`` sees), and then it is removed, with any cgroups the app
    made below it.
    """
    import select

    kill(path)
    try:
        fd = os.open(os.path.join(path, "cgroup.events"), os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return not os.path.isdir(path)
    try:
        poller = select.poll()
        poller.register(fd, select.POLLPRI)
        deadline = time.monotonic() + timeout
        while True:
            events = os.pread(fd, 4096, 0)  # read first: a later change wakes the poll
            if b"populated 0" in events:
                return _rmtree(path)
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            poller.poll(left * 1000)
    finally:
        os.close(fd)


def _rmtree(path: str) -> bool:
    """Removes an empty cgroup and the (empty) cgroups below it, deepest first."""
    try:
        subs = [e.path for e in os.scandir(path) if e.is_dir(follow_symlinks=False)]
    except FileNotFoundError:
        return True
    return all([_rmtree(sub) for sub in subs]) and _rmdir(path)


def _rmdir(path: str) -> bool:
    try:
        os.rmdir(path)
    except FileNotFoundError:
        return True
    except OSError as e:
        if e.errno == errno.EBUSY:
            return False
        raise
    return True


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)

"""Starting the local scheduler's next supervisor ahead of time: a warm start.

Each local app has its own supervisor, a fresh Python process (see
:mod:`torchx.schedulers.local.scheduler`). Its interpreter start and imports take about
20 ms, and on the path of ``torchx run`` they came after all of the CLI's own start (its
imports, the component, the dry run), while the second core sat idle. :func:`start`
launches that process at once: it imports what it needs while the launcher is still
busy, then waits. The next app the local scheduler schedules in this process is handed
to it (:func:`take`) instead of a new process being started; the app then starts about
20 ms sooner.

A warm process that is never handed an app (the run was a dry run, went to another
scheduler, or failed) exits as soon as this process closes its end of the pipe: at
exit, or at :func:`discard`. It holds none of this process's files (its standard
streams are ``/dev/null`` until it has an app), so nobody waits for it.

The ``torchx`` CLI calls :func:`start` first thing for ``torchx run`` when the scheduler
may be the local one. Standard library only, and cheap to import.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Warm", "discard", "hand_over", "start", "supervisor_path", "take"]


class Warm:
    """A supervisor process started ahead, waiting for its app."""

    def __init__(self, popen: Any, ready_fd: int, app_fd: int, path: list[str]) -> None:
        #: the ``subprocess.Popen`` of the process
        self.popen = popen
        #: read end of the pipe it answers ``ok`` on, once it has taken its app
        self.ready_fd = ready_fd
        #: write end of the pipe it reads its app from (EOF: no app, it exits)
        self.app_fd = app_fd
        #: the ``sys.path`` it was given
        self.path = path


_warm: Warm | None = None


def supervisor_path() -> list[str]:
    """The ``sys.path`` a supervisor is given: where this process imports torchx from.

    The supervisor runs with ``-S`` (no site: it halves interpreter start-up), so it is
    told where torchx-runner and torchx-specs are (an editable install, ``PYTHONPATH``, a
    test's ``sys.path``) without ``PYTHONPATH`` leaking into the replicas.
    """
    from importlib.util import find_spec

    path = []
    for name in ("torchx.schedulers", "torchx.specs"):
        spec = find_spec(name)
        origin = spec.origin if spec is not None else None
        if origin:
            path.append(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(origin)))))
    path += [p for p in sys.path if p and os.path.isabs(p)]
    return list(dict.fromkeys(path))


def start() -> None:
    """Starts a supervisor process ahead of the next local app (once; Linux only).

    Never raises: a warm start that cannot be made is simply not there, and the local
    scheduler starts its supervisor as usual.
    """
    global _warm
    if _warm is not None or not sys.platform.startswith("linux"):
        return
    try:
        import subprocess

        path = supervisor_path()
        ready_r, ready_w = os.pipe()
        app_r, app_w = os.pipe()
    except Exception:
        return
    code = (
        # _signal, not signal: the latter imports enum. SIGTERM (cancel) is ignored until
        # the supervisor installs its handler; a cancel that comes before is not lost:
        # it is also recorded in state.json.
        "import os, sys, _signal; _signal.signal(_signal.SIGTERM, _signal.SIG_IGN); "
        f"sys.path[:] = {path!r}; "
        # what the supervisor imports, and ctypes (for prctl), before it waits
        "import ctypes, torchx.schedulers.local.supervisor\n"
        "data = bytearray()\n"
        "while True:\n"
        f"    chunk = os.read({app_r}, 65536)\n"
        "    if not chunk: break\n"
        "    data += chunk\n"
        "if not data: os._exit(0)\n"
        "import json; msg = json.loads(data)\n"
        "os.environ.clear(); os.environ.update(msg['env']); os.umask(msg['umask'])\n"
        "args = msg['argv']\n"
        "fd = os.open(os.path.join(args[0], 'supervisor.log'),"
        " os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW)\n"
        "os.dup2(fd, 1); os.dup2(fd, 2); os.close(fd); os.chdir(args[0])\n"
        "sys.argv[1:] = args\n"
        f"os.write({ready_w}, b'ok'); os.close({ready_w})\n"
        "from torchx.schedulers.local.boot import start; start()\n"
    )
    try:
        popen = subprocess.Popen(
            [sys.executable, "-S", "-c", code],
            cwd="/",
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(ready_w, app_r),
            start_new_session=True,
        )
    except Exception:
        os.close(ready_r)
        os.close(app_w)
        return
    finally:
        os.close(ready_w)
        os.close(app_r)
    _warm = Warm(popen, ready_r, app_w, path)


def hand_over(warm: Warm, argv: list[str]) -> bool:
    """Gives the warm supervisor its app (its arguments); False if it is gone.

    Sent with it: this process's environment and umask as they are now (the replicas get
    them, as from a supervisor started now), not as they were when it was started.
    Closes ``app_fd`` either way.
    """
    import json

    mask = os.umask(0o077)
    os.umask(mask)
    payload = json.dumps({"argv": argv, "env": dict(os.environ), "umask": mask}).encode()
    view = memoryview(payload)
    try:
        while view:
            view = view[os.write(warm.app_fd, view) :]
        return True
    except OSError:  # it died meanwhile (EPIPE)
        return False
    finally:
        os.close(warm.app_fd)


def take(path: list[str]) -> Warm | None:
    """The warm supervisor, if there is one started with ``path`` and still waiting.

    It is taken: the caller hands it an app (``app_fd``) or :func:`discard` s it.
    """
    global _warm
    warm, _warm = _warm, None
    if warm is None:
        return None
    if warm.path != path or warm.popen.poll() is not None:
        discard(warm)
        return None
    return warm


def discard(warm: Warm | None = None) -> None:
    """Lets a warm supervisor (default: the waiting one) go: it exits at once."""
    global _warm
    if warm is None:
        warm, _warm = _warm, None
    if warm is None:
        return
    for fd in (warm.app_fd, warm.ready_fd):
        try:
            os.close(fd)
        except OSError:
            pass

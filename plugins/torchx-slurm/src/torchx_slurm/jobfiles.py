"""What a job leaves in its directory, read with the standard library only.

The job's script records each replica's exit code (``<role>.<k>.exit``) and its restart
count (``restarts``) in the job's own directory ``JOB_DIR/.torchx-slurm/<job id>/``, and
names each replica's Slurm job component ``<app>:<role>:<k>``. The scheduler
(:mod:`torchx_slurm.scheduler`) and the quick handler (:mod:`torchx_slurm.quick`, which
must not import the spec types) read them through these functions, so both read them
the same way.
"""

from __future__ import annotations

import os
import re
import stat

#: The directory, in the job directory, holding each job's own directory.
STATE_DIR = ".torchx-slurm"

#: The file a job array's tasks leave in the job's own directory: what tells an array
#: apart where the records do not (the job-completion file, ``sacct -c``, names each
#: task by its own job id, with nothing saying it belongs to an array).
ARRAY_MARK = "array"

_EXIT_FILE = re.compile(r"(.+)\.(\d+)\.exit")


def split_name(name: str) -> tuple[str, str, int] | None:
    """``"train-ab12:trainer:3"`` -> ``("train-ab12", "trainer", 3)``; None for other jobs."""
    parts = name.rsplit(":", 2)
    if len(parts) != 3 or not parts[2].isdigit():
        return None
    return parts[0], parts[1], int(parts[2])


def read_int(path: str) -> int | None:
    """The integer a small file holds; None if it cannot be read or holds none."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read(32).strip()
    except OSError:
        return None
    return int(text) if text.lstrip("-").isdigit() else None


def exit_files(state_dir: str) -> list[tuple[str, int, int]]:
    """``(role, replica, exit code)`` of every exit code the job script recorded."""
    if not state_dir:
        return []
    try:
        names = os.listdir(state_dir)
    except OSError:
        return []
    found = []
    for name in names:
        match = _EXIT_FILE.fullmatch(name)
        if match:
            code = read_int(os.path.join(state_dir, name))
            if code is not None:
                found.append((match.group(1), int(match.group(2)), code))
    return found


def is_own_file(path: str) -> bool:
    """Whether ``path`` is a regular file itself (not a link to one) of this user's."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid()

"""Is the program a role runs on the PATH its replicas get? Checked before submitting.

A replica whose program is missing used to be accepted, given a handle, and then fail
with exit 127: ``dist.ddp`` without torch installed runs ``bash -c 'torchrun ...'``,
and only the replica's log said ``torchrun: command not found``. :func:`check_program`
refuses such a role when it is submitted, before anything is written or started, with
one line naming the program (and, for ``torchrun``, where it comes from). A dry run
is not refused: looking at the request for ``dist.ddp`` on a machine without torch
(to run it elsewhere) is legitimate.

The program is the role's entrypoint, or, for a shell given a script (``sh -c``,
``bash -c``: what ``dist.ddp`` and ``utils.sh`` build), the script's first word when
it is a plain command name (not a shell builtin or keyword, an assignment or anything
quoted or computed: those cannot be looked up, and are left to run). Only bare names
are looked up, on the replica's ``PATH`` plus the launching Python's bin directory (as
the supervisor starts them); a name found there that is not executable is left to fail
at launch with 126, as it does today.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from collections.abc import Mapping, Sequence

from torchx.specs import SpecError

_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh"})
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")
# POSIX and bash builtins and keywords: not programs on PATH
_BUILTINS = frozenset(
    [
        ".",
        ":",
        "[",
        "[[",
        "!",
        "{",
        "}",
        "alias",
        "bg",
        "bind",
        "break",
        "builtin",
        "caller",
        "case",
        "cd",
        "command",
        "compgen",
        "complete",
        "continue",
        "declare",
        "dirs",
        "disown",
        "do",
        "done",
        "echo",
        "elif",
        "else",
        "enable",
        "esac",
        "eval",
        "exec",
        "exit",
        "export",
        "false",
        "fc",
        "fg",
        "fi",
        "for",
        "function",
        "getopts",
        "hash",
        "help",
        "history",
        "if",
        "in",
        "jobs",
        "kill",
        "let",
        "local",
        "logout",
        "mapfile",
        "popd",
        "printf",
        "pushd",
        "pwd",
        "read",
        "readarray",
        "readonly",
        "return",
        "select",
        "set",
        "shift",
        "shopt",
        "source",
        "suspend",
        "test",
        "then",
        "time",
        "times",
        "trap",
        "true",
        "type",
        "typeset",
        "ulimit",
        "umask",
        "unalias",
        "unset",
        "until",
        "wait",
        "while",
    ]
)
#: Where a well-known program comes from, for the message.
_PROVIDED_BY = {"torchrun": "PyTorch: pip install torch"}


def program_of(entrypoint: str, args: Sequence[str]) -> str | None:
    """The program a replica runs, when it can be named; None when it cannot."""
    if os.path.basename(entrypoint) in _SHELLS and len(args) >= 2 and args[0] == "-c":
        try:
            words = shlex.split(args[1])
        except ValueError:
            return None
        first = words[0] if words else ""
        if not _NAME.fullmatch(first) or first in _BUILTINS:
            return None
        return first
    return entrypoint


def check_program(
    where: str, entrypoint: str, args: Sequence[str], env: Mapping[str, str], cwd: str
) -> None:
    """Raises :class:`SpecError` when the replica's program is a bare name on no PATH dir.

    Relative ``PATH`` entries are taken from ``cwd``, as the replica's ``execvpe`` does.
    """
    program = program_of(entrypoint, args)
    if not program or "/" in program or not _NAME.fullmatch(program):
        return
    path = env.get("PATH", os.environ.get("PATH", ""))
    dirs = [os.path.join(cwd, d) for d in path.split(os.pathsep) if d]
    if sys.executable:
        dirs.append(os.path.dirname(sys.executable))
    if any(os.path.exists(os.path.join(d, program)) for d in dirs):
        return
    via = "" if program == entrypoint else f" (the first command of its {entrypoint} script)"
    source = _PROVIDED_BY.get(program)
    hint = f": it comes with {source}" if source else ": install it, or put its directory on PATH"
    raise SpecError(f"{where}: {program!r}{via} is not on the PATH its replicas get{hint}")

"""Which nox sessions CI must run, and whether each of them did (used by ``.ci/run``).

A CI that finds its sessions by scraping ``nox --list`` passes without running anything
once that output changes. So each list is explicit and checked against what nox sees,
and every run is checked afterwards against nox's own ``--report``:

* ``python tools/ci_sessions.py default``: the default sessions (``nox --list --json``,
  i.e. ``nox.options.sessions``), one per line; fails if there are none.
* ``python tools/ci_sessions.py integration``: ``INTEGRATION_SESSIONS`` of noxfile.py,
  one per line, after checking that it names exactly the sessions nox knows whose names
  start with ``integration``: a session added without being listed (or listed without
  being defined) fails here, loudly, instead of being left out of CI.
* ``python tools/ci_sessions.py check REPORT NAME...``: every NAME is in the report
  written by ``nox --report REPORT`` with the result ``success``; a session that was
  skipped, failed or never selected fails the check.

Needs nox on the interpreter that runs it (``.ci/run`` installs the pinned one first).
Exit 1 with one line per problem on stderr.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOXFILE = ROOT / "noxfile.py"
LIST_NAME = "INTEGRATION_SESSIONS"
PREFIX = "integration"


class CiSessionError(Exception):
    """What CI expects and what nox has disagree: said in one line."""


def listed_integration(noxfile: Path = NOXFILE) -> list[str]:
    """``INTEGRATION_SESSIONS`` of ``noxfile``: a literal tuple or list of session names.

    Read from the source (``ast``), not imported: noxfile.py imports nox and registers
    sessions, and a name computed at import time could not be checked here.
    """
    tree = ast.parse(noxfile.read_text(encoding="utf-8"), filename=str(noxfile))
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if any(isinstance(t, ast.Name) and t.id == LIST_NAME for t in targets):
            try:
                names = ast.literal_eval(value)
            except ValueError:
                raise CiSessionError(
                    f"{noxfile.name}: {LIST_NAME} must be a literal tuple of session names "
                    f"(line {node.lineno})"
                ) from None
            if not isinstance(names, tuple | list) or not all(isinstance(n, str) for n in names):
                raise CiSessionError(
                    f"{noxfile.name}: {LIST_NAME} must be a tuple of strings, got {names!r}"
                )
            return list(names)
    raise CiSessionError(f"{noxfile.name}: no {LIST_NAME} = (...) at module level")


def nox_sessions(*args: str, root: Path = ROOT) -> list[str]:
    """Names of the sessions ``nox --list --json ARGS`` selects in ``root``."""
    proc = subprocess.run(
        [sys.executable, "-m", "nox", "--list", "--json", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise CiSessionError(f"nox --list --json {' '.join(args)} exited {proc.returncode}: {last}")
    try:
        return [entry["name"] for entry in json.loads(proc.stdout)]
    except (ValueError, TypeError, KeyError) as e:
        raise CiSessionError(f"nox --list --json printed no session list ({e})") from None


def default_sessions(root: Path = ROOT) -> list[str]:
    names = nox_sessions(root=root)
    if not names:
        raise CiSessionError("nox selects no default session")
    return names


def integration_sessions(root: Path = ROOT) -> list[str]:
    """``INTEGRATION_SESSIONS``, checked against the ``integration*`` sessions nox knows."""
    listed = listed_integration(root / "noxfile.py")
    known = [n for n in nox_sessions("-k", PREFIX, root=root) if n.startswith(PREFIX)]
    if not listed:
        raise CiSessionError(f"noxfile.py: {LIST_NAME} is empty")
    unlisted = sorted(set(known) - set(listed))
    undefined = sorted(set(listed) - set(known))
    if unlisted:
        raise CiSessionError(
            f"noxfile.py defines {', '.join(unlisted)} but {LIST_NAME} does not list it: "
            "add it there so that CI runs it"
        )
    if undefined:
        raise CiSessionError(
            f"noxfile.py: {LIST_NAME} lists {', '.join(undefined)}, which nox does not know "
            f"(sessions whose names start with {PREFIX!r}: {', '.join(known) or 'none'})"
        )
    return listed


def check_report(report: Path, expected: Sequence[str]) -> list[str]:
    """Problems (one line each) with the sessions ``expected`` in nox's ``--report`` file."""
    try:
        data = json.loads(report.read_text(encoding="utf-8"))
        results = {s["name"]: (s["result"], s.get("reason")) for s in data["sessions"]}
    except FileNotFoundError:
        return [f"{report}: no nox report (did nox run at all?)"]
    except (ValueError, TypeError, KeyError) as e:
        return [f"{report}: not a nox report ({type(e).__name__}: {e})"]
    problems = []
    for name in expected:
        if name not in results:
            problems.append(f"session {name} did not run (not in {report.name})")
        elif results[name][0] != "success":
            result, reason = results[name]
            why = f": {reason}" if reason else ""
            problems.append(f"session {name} did not pass: {result}{why}")
    if not expected:
        problems.append("no session was expected: nothing would be checked")
    return problems


def main(argv: Sequence[str]) -> int:
    try:
        match list(argv):
            case ["default"]:
                print("\n".join(default_sessions()))
            case ["integration"]:
                print("\n".join(integration_sessions()))
            case ["check", report, *names]:
                problems = check_report(Path(report), names)
                for line in problems:
                    print(f"ci_sessions: {line}", file=sys.stderr)
                if problems:
                    return 1
                print(f"ci_sessions: {len(names)} sessions ran and passed: {' '.join(names)}")
            case _:
                print(
                    "usage: ci_sessions.py default | integration | check REPORT NAME...",
                    file=sys.stderr,
                )
                return 2
    except CiSessionError as e:
        print(f"ci_sessions: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Removing finished apps: ``delete`` of one, and pruning by age or count (retention).

Each finished app keeps its records and logs until deleted. A long-lived machine wants
them gone on their own: the ``retain_last`` / ``retain_for`` run options (usually set
once, in the ``[local]`` section of ``.torchxconfig``) make every app's supervisor,
after the app's final state, prune the finished apps of its state directory that are
neither among the newest ``retain_last`` nor younger than ``retain_for``;
``LocalScheduler.prune`` (``torchx delete --older-than``) does the same on demand.

Pruning is cheap: the apps are ordered by the time their ``state.json`` was last
written (one ``stat`` each; the final state is an app's last write), and only the apps
that may go are read, to confirm under their lock that they are finished and old
enough. A running app is never removed. Only the standard library is imported: the
supervisor runs this.
"""

from __future__ import annotations

import os
import shutil
import time

from torchx.schedulers.local.state import (
    TERMINAL,
    default_state_dir,
    ensure_private_dir,
    locked,
    read_json,
)
from torchx.specs.durations import parse_duration

__all__ = ["parse_duration", "prune", "remove_app_files"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def remove_app_files(app_id: str, doomed: str, state: dict[str, Any], links: list[str]) -> None:
    """Removes an app's records (already renamed to ``doomed``), links and outside logs."""
    for link in links:
        try:
            os.unlink(link)
        except FileNotFoundError:
            pass
    # <log_dir>/<app_id>, and the same from each <log_dir>/<app_id>/<role>/<k>
    log_dirs = {str(state.get("log_dir") or "")} | {
        os.path.dirname(os.path.dirname(str(rep.get("log_dir", ""))))
        for reps in state.get("replicas", {}).values()
        for rep in reps
    }
    shutil.rmtree(doomed, ignore_errors=True)
    apps_dir = os.path.dirname(os.path.dirname(doomed))  # <state_dir> (doomed: trash/...)
    for d in log_dirs:
        if d and os.path.basename(d) == app_id and not d.startswith(apps_dir + os.sep):
            shutil.rmtree(d, ignore_errors=True)


def prune(
    state_dir: str,
    keep_last: int | None = None,
    keep_for: float | None = None,
    now: float | None = None,
) -> list[str]:
    """Removes the finished apps of ``state_dir`` that the retention does not keep.

    An app is kept if it is among the ``keep_last`` newest (any state), or ended less
    than ``keep_for`` seconds ago, or is not finished. With neither given, nothing is
    removed. Returns the ids of the apps removed.
    """
    if keep_last is None and keep_for is None:
        return []
    now = time.time() if now is None else now
    apps = os.path.join(state_dir, "apps")
    try:
        names = os.listdir(apps)
    except FileNotFoundError:
        return []
    dated = []
    for name in names:
        try:
            dated.append((os.stat(os.path.join(apps, name, "state.json")).st_mtime, name))
        except OSError:
            continue
    dated.sort(reverse=True)
    removed = []
    for rank, (mtime, app_id) in enumerate(dated):
        if keep_last is not None and rank < keep_last:
            continue
        if keep_for is not None and now - mtime < keep_for:
            continue  # written recently: ended recently, or still running
        if _remove_if_finished(state_dir, app_id, keep_for, now):
            removed.append(app_id)
    return removed


def _remove_if_finished(state_dir: str, app_id: str, keep_for: float | None, now: float) -> bool:
    app_dir = os.path.join(state_dir, "apps", app_id)
    trash = os.path.join(state_dir, "trash")
    try:
        with locked(app_dir):
            try:
                state = read_json(os.path.join(app_dir, "state.json"))
            except ValueError:
                return False  # unreadable: left to an explicit delete
            if not isinstance(state, dict) or state.get("state") not in TERMINAL:
                return False
            ended = float(state.get("finished") or state.get("updated") or 0)
            if keep_for is not None and now - ended < keep_for:
                return False
            ensure_private_dir(trash)
            doomed = os.path.join(trash, f"{app_id}.{os.urandom(4).hex()}")
            os.rename(app_dir, doomed)
    except (FileNotFoundError, NotADirectoryError):
        return False  # deleted meanwhile
    links = {os.path.join(d, "links", f"{app_id}.json") for d in (state_dir, default_state_dir())}
    remove_app_files(app_id, doomed, state, sorted(links))
    return True

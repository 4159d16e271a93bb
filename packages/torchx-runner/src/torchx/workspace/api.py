"""WorkspaceMixin: for schedulers that ship the user's local code with the job.

A scheduler that mixes this in gets the :attr:`~torchx.specs.Role.workspace` of each
role built before submission (into a container image, a job directory, an archive the
job unpacks) and adds its :meth:`~WorkspaceMixin.workspace_opts` to its run options.

When a build runs, exactly: in :meth:`Scheduler.prepare
<torchx.schedulers.contract.api.Scheduler.prepare>` with ``dryrun=False`` (``Runner.run``,
``Scheduler.submit``, and ``Runner.schedule`` of a dryrun's info, which builds then),
after ``_pre_build_validate`` and before ``_validate`` and ``submit_dryrun``, on the
scheduler's private copy of the app, once per role that has a workspace. Never on a
dry run (``Runner.dryrun``, ``torchx run --dryrun``): nothing is built or written
then; :meth:`~WorkspaceMixin.plan_workspaces` may point the roles where the build will
put the workspace, so that the dry run's request is the one submitted.

:func:`walk_workspace` lists a workspace's files honouring its ignore file
(:data:`TORCHX_IGNORE`); :class:`~torchx.workspace.dir_workspace.DirWorkspaceMixin`
uses it to copy the workspace into a job directory.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import Generic, TypeVar

from torchx.specs import CfgVal, Role, Workspace, runopts

__all__ = ["TORCHX_IGNORE", "WorkspaceMixin", "walk_workspace"]

#: The ignore file read at the root of a workspace (one pattern a line, see walk_workspace).
TORCHX_IGNORE = ".torchxignore"

T = TypeVar("T")


class WorkspaceMixin(Generic[T]):
    """Builds each role's workspace and points the role at the result.

    Implement :meth:`build_workspace_and_update_role`; declare the build's run options
    in :meth:`workspace_opts`. The type parameter is unused (upstream code writes
    ``WorkspaceMixin[None]``; that keeps working).
    """

    def workspace_opts(self) -> runopts:
        """Run options of the workspace build (merged into the scheduler's run options)."""
        return runopts()

    def build_workspace_and_update_role(
        self, role: Role, workspace: Workspace, cfg: Mapping[str, CfgVal]
    ) -> None:
        """Builds ``workspace`` for ``role`` and points the role (e.g. its ``image``) at it.

        ``cfg`` is the resolved run options. ``role`` belongs to the scheduler's copy
        of the app, so change it freely. Raise with a one-line message on failure,
        after removing whatever this build created.
        """
        raise NotImplementedError(f"{type(self).__name__} does not build workspaces")

    def build_workspaces(self, roles: list[Role], cfg: Mapping[str, CfgVal]) -> None:
        """Builds the workspace of every role that has one, in order."""
        for role in roles:
            if role.workspace is not None:
                self.build_workspace_and_update_role(role, role.workspace, cfg)

    def plan_workspaces(self, roles: list[Role], cfg: Mapping[str, CfgVal]) -> None:
        """Points each role that has a workspace where its build will put it; builds nothing.

        Called on a dry run in place of :meth:`build_workspaces`, with no side effect
        allowed. When the roles then name the build's result (a job directory given by
        a run option, an image tag computed from the workspace's content), the build at
        submission changes nothing the request was made from, and the dry run's request
        is submitted as it is (``Scheduler.build_workspaces_of``). The default plans
        nothing: the request is then made again after the build.
        """


def walk_workspace(
    path: str, ignore_name: str = TORCHX_IGNORE
) -> Iterator[tuple[str, list[str], list[str]]]:
    """Walks the directory ``path`` like :func:`os.walk`, leaving out what its ignore file names.

    Yields ``(reldir, dirnames, filenames)`` top-down, ``reldir`` relative to ``path``
    (``""`` for the top, ``/``-separated), in sorted order. Symbolic links are listed
    (in ``filenames`` when they point at a file, ``dirnames`` at a directory) but never
    followed. The ignore file ``<path>/<ignore_name>`` (read at the top only) holds one
    pattern a line, in the spirit of ``.gitignore`` and ``.dockerignore``:

    * blank lines and lines starting with ``#`` are skipped;
    * ``*``, ``?`` and ``[...]`` are :mod:`fnmatch` wildcards;
    * a pattern without ``/`` (``*.pyc``, ``__pycache__``) matches a name at any depth;
      one with ``/`` (``data/raw``, ``/build``) matches the path from the top;
    * a trailing ``/`` (``out/``) matches directories only;
    * ``!pattern`` brings back what an earlier pattern left out; the last matching
      line wins. As in git, nothing inside a left-out directory comes back.

    A left-out directory is not entered at all (a ``.venv`` costs nothing). As with
    :func:`os.walk`, removing names from ``dirnames`` in place skips those directories.
    """
    rules = _read_rules(os.path.join(path, ignore_name))
    top = os.path.abspath(path)
    pending = [""]
    while pending:
        rel = pending.pop()
        here = os.path.join(top, rel) if rel else top
        dirnames: list[str] = []
        filenames: list[str] = []
        with os.scandir(here) as entries:
            for entry in entries:
                child = f"{rel}/{entry.name}" if rel else entry.name
                is_dir = entry.is_dir()  # follows a link: a link to a directory is a dir
                if _ignored(rules, child, entry.name, is_dir):
                    continue
                (dirnames if is_dir else filenames).append(entry.name)
        dirnames.sort()
        filenames.sort()
        yield rel, dirnames, filenames
        for name in reversed(dirnames):  # popped in sorted order: a top-down, sorted walk
            child = f"{rel}/{name}" if rel else name
            if not os.path.islink(os.path.join(top, child)):
                pending.append(child)


# (pattern, negated, directories only, anchored: matched against the whole path)
_Rule = tuple[str, bool, bool, bool]


def _read_rules(ignore_file: str) -> list[_Rule]:
    try:
        with open(ignore_file, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return []
    rules: list[_Rule] = []
    for raw in lines:
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        body = line[1:].strip() if negated else line
        dir_only = body.endswith("/")
        core = body.rstrip("/")
        pattern = core.lstrip("/")
        if pattern:
            rules.append((pattern, negated, dir_only, "/" in core))
    return rules


def _ignored(rules: list[_Rule], relpath: str, name: str, is_dir: bool) -> bool:
    from fnmatch import fnmatchcase

    ignored = False
    for pattern, negated, dir_only, anchored in rules:
        if dir_only and not is_dir:
            continue
        if fnmatchcase(relpath if anchored else name, pattern):
            ignored = not negated
    return ignored

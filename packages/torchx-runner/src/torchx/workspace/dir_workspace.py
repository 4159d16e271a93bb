"""DirWorkspaceMixin: a workspace copied into a fresh job directory the job runs in.

For schedulers whose jobs see the submitting machine's filesystem (Slurm on a shared
filesystem, the local machine). With the run option ``job_dir`` set, building the
workspace creates that directory (it must not exist: a job never runs in, or
overwrites, another job's files), copies each workspace project into it (honouring the
project's ``.torchxignore``, see :func:`walk_workspace`), and sets each role's
``image`` to it: the scheduler then starts the role there. Without ``job_dir`` nothing
is copied and roles run from their image as given. As for every workspace, the copy is
made only for a real submission, never on a dry run; a dry run already points the roles
at ``job_dir`` (:meth:`~DirWorkspaceMixin.plan_workspaces`), so that its request is the
one submitted.

A scheduler mixes it in next to :class:`~torchx.schedulers.contract.api.Scheduler`::

    class MyScheduler(DirWorkspaceMixin, Scheduler[Mapping[str, CfgVal]]):
        ...  # schedule() starts each role in dryrun_info.app's role.image

and gets ``job_dir`` in its run options.

:class:`TmpDirWorkspaceMixin` (upstream's name) copies the workspace into a new
temporary directory instead, with no run option. Both accept upstream TorchX 0.7's
plain path string (``"/home/me/proj"``, or ``"file:///home/me/proj"``) wherever they
take a workspace, as one project copied to the root.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping
from typing import Any

from torchx.specs import CfgVal, InvalidRunConfigException, Role, Workspace, runopts
from torchx.workspace.api import TORCHX_IGNORE, WorkspaceMixin, walk_workspace

__all__ = [
    "JOB_DIR",
    "DirWorkspaceMixin",
    "TmpDirWorkspaceMixin",
    "as_workspace",
    "copy_workspace",
    "walk_workspace",
]

#: The run option naming the job directory.
JOB_DIR = "job_dir"


class DirWorkspaceMixin(WorkspaceMixin[Any]):
    """Copies the workspace into the directory of the ``job_dir`` run option; roles run there."""

    def workspace_opts(self) -> runopts:
        opts = runopts()
        opts.add(
            JOB_DIR,
            type_=str,
            default=None,
            help="directory to create for the job (must not exist): the workspace is copied "
            "into it, honouring .torchxignore, and the job runs there",
        )
        return opts

    def workspace_leaves_out(self, path: str, is_dir: bool) -> bool:
        """Whether the workspace copy leaves out ``path`` (absolute), beyond ``.torchxignore``.

        None by default. A scheduler whose jobs write into the directories a workspace
        may hold (job directories, logs) leaves those out here, so that a job never
        ships the logs and state of the jobs before it.
        """
        return False

    def build_workspaces(self, roles: list[Role], cfg: Mapping[str, CfgVal]) -> None:
        """Creates ``job_dir`` once and copies every role's workspace into it.

        If anything fails, the job directory is removed again, then the error raised.
        """
        job_dir = _job_dir(cfg)
        if job_dir is None or not any(role.workspace is not None for role in roles):
            return
        _make_job_dir(job_dir)
        try:
            copied: list[Workspace] = []
            for role in roles:
                if role.workspace is None:
                    continue
                if role.workspace not in copied:
                    copy_workspace(role.workspace, job_dir, leave_out=self.workspace_leaves_out)
                    copied.append(role.workspace)
                role.image = job_dir
        except BaseException:
            shutil.rmtree(job_dir, ignore_errors=True)
            raise

    def plan_workspaces(self, roles: list[Role], cfg: Mapping[str, CfgVal]) -> None:
        """On a dry run: each role with a workspace runs in ``job_dir``; nothing is created.

        The request of the dry run then names the job directory, as the one made after
        the copy would: it is submitted as it is.
        """
        job_dir = _job_dir(cfg)
        if job_dir is None:
            return
        for role in roles:
            if role.workspace is not None:
                role.image = job_dir

    def build_workspace_and_update_role(
        self, role: Role, workspace: Workspace | str, cfg: Mapping[str, CfgVal]
    ) -> None:
        """Creates ``job_dir``, copies ``workspace`` into it and makes it the role's image.

        ``workspace`` may be 0.7's plain path string (see :func:`as_workspace`).
        """
        job_dir = _job_dir(cfg)
        if job_dir is None:
            return
        ws = as_workspace(workspace)
        _make_job_dir(job_dir)
        try:
            copy_workspace(ws, job_dir, leave_out=self.workspace_leaves_out)
        except BaseException:
            shutil.rmtree(job_dir, ignore_errors=True)
            raise
        role.image = job_dir


class TmpDirWorkspaceMixin(WorkspaceMixin[Any]):
    """Copies each role's workspace into a new temporary directory, the role's image.

    Upstream TorchX's mixin for schedulers whose jobs run on this machine: no run
    option, a fresh ``torchx_workspace_*`` directory under the system's temporary
    directory per build (``.torchxignore`` honoured). The directory is the job's: it
    is left for the job to run in, and removed again only if the copy fails.
    """

    def build_workspace_and_update_role(
        self, role: Role, workspace: Workspace | str, cfg: Mapping[str, CfgVal]
    ) -> None:
        """Copies ``workspace`` (a Workspace or 0.7's path string) into a new temporary dir."""
        import tempfile

        ws = as_workspace(workspace)
        tmp = tempfile.mkdtemp(prefix="torchx_workspace_")
        try:
            copy_workspace(ws, tmp)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        role.image = tmp


def as_workspace(workspace: Workspace | str) -> Workspace:
    """A :class:`~torchx.specs.Workspace` from one, or from upstream 0.7's path string.

    0.7 named a workspace by one directory, as a path or a ``file://`` URL; it is
    copied to the root, as ``Workspace(projects={path: ""})``. The string is taken
    as one path, never parsed as ``DIR=SUBDIR`` (a path may hold ``=`` or ``,``).

    >>> as_workspace("file:///home/me/proj").projects
    {'/home/me/proj': ''}
    >>> as_workspace(Workspace(projects={"a": "b"})).projects
    {'a': 'b'}
    """
    if isinstance(workspace, Workspace):
        return workspace
    if not isinstance(workspace, str) or not workspace.strip():
        from torchx.specs.errors import InvalidWorkspaceException

        raise InvalidWorkspaceException(
            f"workspace must be a Workspace or a directory path, got {workspace!r}"
        )
    path = workspace.strip()
    if path.startswith("file://"):
        path = path[len("file://") :]
    return Workspace(projects={path: ""})


def copy_workspace(
    workspace: Workspace,
    dest: str,
    ignore_name: str = TORCHX_IGNORE,
    *,
    leave_out: Callable[[str, bool], bool] | None = None,
) -> None:
    """Copies each project of ``workspace`` into ``dest/<its target>``, leaving out ignored files.

    Files keep their permission bits and times; symbolic links are copied as links.
    A project that is a single file is copied into its target directory. ``leave_out``
    (absolute path, is a directory) -> True leaves out more than the ignore file does
    (a left-out directory is not entered).
    """
    for src, target in workspace.projects.items():
        source = os.path.abspath(os.path.expanduser(src))
        out = os.path.join(dest, target) if target else dest
        if os.path.isfile(source):
            os.makedirs(out, exist_ok=True)
            shutil.copy2(source, os.path.join(out, os.path.basename(source)))
            continue
        if not os.path.isdir(source):
            from torchx.specs.errors import InvalidWorkspaceException

            raise InvalidWorkspaceException(
                f"workspace project {src!r} does not exist: give an existing directory"
            )
        skip = os.path.realpath(dest)  # a job_dir inside the workspace is not copied into itself
        for rel, dirnames, filenames in walk_workspace(source, ignore_name):
            here = os.path.join(out, rel) if rel else out
            os.makedirs(here, exist_ok=True)
            for name in list(dirnames):
                from_path = os.path.join(source, rel, name)
                if os.path.islink(from_path):
                    os.symlink(os.readlink(from_path), os.path.join(here, name))
                elif os.path.realpath(from_path) == skip or (
                    leave_out and leave_out(from_path, True)
                ):
                    dirnames.remove(name)
            for name in filenames:
                if leave_out and leave_out(os.path.join(source, rel, name), False):
                    continue
                shutil.copy2(
                    os.path.join(source, rel, name),
                    os.path.join(here, name),
                    follow_symlinks=False,
                )


def _job_dir(cfg: Mapping[str, CfgVal]) -> str | None:
    job_dir = cfg.get(JOB_DIR)
    if job_dir is None or job_dir == "":
        return None
    if not isinstance(job_dir, str):
        raise InvalidRunConfigException(
            f"run option '{JOB_DIR}' expects a directory path (str), got {job_dir!r}"
        )
    return os.path.abspath(os.path.expanduser(job_dir))


def _make_job_dir(job_dir: str) -> None:
    parent = os.path.dirname(job_dir)
    os.makedirs(parent, exist_ok=True)
    try:
        os.mkdir(job_dir)
    except FileExistsError:
        raise InvalidRunConfigException(
            f"run option '{JOB_DIR}': {job_dir} exists already; give a new directory "
            "(a job never reuses another job's directory)"
        ) from None

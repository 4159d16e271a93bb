"""Workspaces: shipping local code with a job.

* :class:`~torchx.workspace.api.WorkspaceMixin`: what a scheduler mixes in to build
  workspaces (and when a build runs: never on a dry run);
* :class:`~torchx.workspace.dir_workspace.DirWorkspaceMixin`: a workspace copied into
  a fresh job directory the job runs in;
* :func:`~torchx.workspace.api.walk_workspace`: a workspace's files, honouring its
  ``.torchxignore``.
"""

from torchx.workspace.api import TORCHX_IGNORE, WorkspaceMixin, walk_workspace

__all__ = ["TORCHX_IGNORE", "WorkspaceMixin", "walk_workspace"]

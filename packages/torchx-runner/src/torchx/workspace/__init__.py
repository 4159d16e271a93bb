"""Workspaces: shipping local code with a job (see :class:`torchx.workspace.api.WorkspaceMixin`)."""

from torchx.workspace.api import WorkspaceMixin

__all__ = ["WorkspaceMixin"]

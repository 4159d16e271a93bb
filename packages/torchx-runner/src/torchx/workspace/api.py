"""WorkspaceMixin: for schedulers that ship the user's local code with the job.

A scheduler that mixes this in gets the ``Role.workspace`` of each role built
before submission (for example into a container image or a directory the job
sees), and adds its workspace options to its run options. The Runner calls
:meth:`WorkspaceMixin.build_workspaces` only for a real submission, never for a dryrun.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Generic, TypeVar

from torchx.specs import CfgVal, Role, Workspace, runopts

T = TypeVar("T")


class WorkspaceMixin(Generic[T]):
    """Builds each role's workspace and points the role at the result."""

    def workspace_opts(self) -> runopts:
        """Run options of the workspace build (merged into the scheduler's run options)."""
        return runopts()

    def build_workspace_and_update_role(
        self, role: Role, workspace: Workspace, cfg: Mapping[str, CfgVal]
    ) -> None:
        """Builds ``workspace`` for ``role`` and updates the role (e.g. its ``image``) to use it."""
        raise NotImplementedError(f"{type(self).__name__} does not build workspaces")

    def build_workspaces(self, roles: list[Role], cfg: Mapping[str, CfgVal]) -> None:
        """Builds the workspace of every role that has one, in order."""
        for role in roles:
            if role.workspace is not None:
                self.build_workspace_and_update_role(role, role.workspace, cfg)

    def dryrun_workspace(self, roles: list[Role]) -> list[str]:
        """What a build would do, for dryrun output (no side effects). Default: nothing."""
        del roles
        return []

    def _workspace_kwargs(self) -> dict[str, Any]:
        return {}

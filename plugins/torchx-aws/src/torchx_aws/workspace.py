"""Workspaces of the AWS schedulers: an image built on the role's, pushed to ``image_repo``.

AWS pulls every image from a registry (ECR, or a private one), never from this machine,
so a workspace (``torchx run --workspace .``) is shipped as torchx-docker ships it: an
image built on ``role.image`` with the workspace's files in it, tagged by content,
pushed to the ``image_repo`` run option, and named in the request in place of
``role.image``. A dry run names that image and builds nothing.

torchx-docker is the optional extra ``docker`` (``pip install 'torchx-aws[docker]'``),
imported by name only when a role has a workspace, through its public
``torchx_docker.images`` module. Without it, or without ``image_repo``, a workspace is
one line saying what to do, before anything is made.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchx.specs import CfgVal, Role, runopts
from torchx.specs.errors import InvalidRunConfigException, SpecError
from torchx.workspace import WorkspaceMixin

__all__ = ["AwsImageWorkspaceMixin"]


class AwsImageWorkspaceMixin(WorkspaceMixin[None]):
    """Workspaces as pushed images (see the module); mix it in before ``Scheduler``.

    The scheduler declares ``image_repo`` among its own run options; ``backend`` (the
    scheduler's name) and :attr:`puller` (who pulls the image) word the errors.
    """

    #: Who pulls the image, for the error that asks for ``image_repo``.
    puller = "AWS"
    backend: str

    def workspace_opts(self) -> runopts:
        return runopts()  # image_repo is one of the scheduler's own run options

    def _image_workspaces(self, cfg: Mapping[str, CfgVal]) -> Any:
        if not cfg.get("image_repo"):
            raise InvalidRunConfigException(
                f"a workspace on {self.backend} needs the run option 'image_repo' (a "
                f"registry {self.puller} pulls from, e.g. -cfg "
                "image_repo=123456789012.dkr.ecr.us-east-1.amazonaws.com/team)"
            )
        import importlib

        try:
            # torchx-docker is an optional extra: imported by name, typed as Any
            images = importlib.import_module("torchx_docker.images")
        except ImportError:
            raise SpecError(
                f"a workspace on {self.backend} is built as an image by torchx-docker, which "
                "is not installed: pip install 'torchx-aws[docker]' (or run without --workspace)"
            ) from None
        helper = getattr(self, "_ws_helper", None)
        if helper is None:
            helper = images.ImageWorkspaceMixin()
            self._ws_helper = helper
        return helper

    def plan_workspaces(self, roles: list[Role], cfg: Mapping[str, CfgVal]) -> None:
        if any(r.workspace is not None for r in roles):
            self._image_workspaces(cfg).plan_workspaces(roles, cfg)

    def build_workspace_and_update_role(
        self, role: Role, workspace: Any, cfg: Mapping[str, CfgVal]
    ) -> None:
        self._image_workspaces(cfg).build_workspace_and_update_role(role, workspace, cfg)

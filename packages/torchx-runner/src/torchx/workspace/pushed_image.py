"""Workspaces as pushed images: for schedulers whose cluster pulls every image from a registry.

A cluster (Kubernetes, AWS Batch, SageMaker) never sees this machine's files or its
container engine, so a workspace (``torchx run --workspace .``) is shipped as an image:
built on ``role.image`` with the workspace's files in it, tagged by content, pushed to
the ``image_repo`` run option, and named by the request in place of ``role.image``. A
dry run names that image and builds nothing. torchx-docker builds and pushes it (its
public ``torchx_docker.images`` module, imported by name only when a role has a
workspace): the plugin offers it as its ``docker`` extra, names that module (its
dependency, not torchx-runner's) and declares ``image_repo`` among its own run options::

    from torchx.workspace.pushed_image import PushedImageWorkspaceMixin

    class MyScheduler(PushedImageWorkspaceMixin, Scheduler[Mapping[str, CfgVal]]):
        image_builder = "torchx_docker.images"  # from the extra below
        distribution = "torchx-mycloud"  # pip install 'torchx-mycloud[docker]'
        puller = "MyCloud"               # who pulls the image, for the messages

Without ``image_repo``, or without torchx-docker, a workspace is one line saying what
to do (in that order: the run option first), before anything is built.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from torchx.specs import CfgVal, Role, runopts
from torchx.specs.errors import InvalidRunConfigException, SpecError
from torchx.workspace.api import WorkspaceMixin

__all__ = ["PushedImageWorkspaceMixin"]


class PushedImageWorkspaceMixin(WorkspaceMixin[None]):
    """Workspaces as images pushed to ``image_repo`` (see the module); mix in before ``Scheduler``."""

    #: The module of torchx-docker's image builder (``ImageWorkspaceMixin``), named by
    #: the plugin that declares torchx-docker as its extra.
    image_builder: ClassVar[str]
    #: The distribution whose ``docker`` extra installs torchx-docker.
    distribution: ClassVar[str] = "torchx-docker"
    #: Who pulls the image (words the message that asks for ``image_repo``).
    puller: ClassVar[str] = "the cluster"
    #: An ``image_repo`` to show in that message.
    example_repo: ClassVar[str] = "registry.example.com/team"
    #: The scheduler's name (``Scheduler`` sets it).
    backend: str

    def workspace_opts(self) -> runopts:
        return runopts()  # image_repo is one of the scheduler's own run options

    def _image_workspaces(self, cfg: Mapping[str, CfgVal]) -> Any:
        if not cfg.get("image_repo"):
            raise InvalidRunConfigException(
                f"a workspace on {self.backend} needs the run option 'image_repo' (a "
                f"registry {self.puller} pulls from, e.g. -cfg image_repo={self.example_repo})"
            )
        import importlib

        try:
            # torchx-docker is an optional extra: imported by name, typed as Any
            images = importlib.import_module(self.image_builder)
        except ImportError:
            raise SpecError(
                f"a workspace on {self.backend} is built as an image by torchx-docker, which "
                f"is not installed: pip install '{self.distribution}[docker]' (or run without "
                "--workspace)"
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

"""Image providers: how a role's ``image`` becomes the directory its replicas run in.

Upstream TorchX's local scheduler takes an ``image_provider_class``; code written
against it passes one of these, and so can a caller here::

    from torchx.schedulers.local.scheduler import LocalDirectoryImageProvider, LocalScheduler

    sched = LocalScheduler("demo", image_provider_class=LocalDirectoryImageProvider)

A provider is made from the run options (``provider_class(cfg)``) at each dry run, and
answers three questions per role: where the image is on this host (:meth:`fetch`,
``${img_root}``), which directory the replicas start in (:meth:`get_cwd`), and which
program they run (:meth:`get_entrypoint`). It is only asked at dry run: the request
then holds the answers, and the supervisor never sees the provider. The dry run asks
through :meth:`ImageProvider.get_replica_param` (upstream's name), which puts the three
answers together in a :class:`ReplicaParam`: a provider that overrides it decides each
role's command, environment and working directory whole.

Without a provider (the default), the local scheduler runs each replica in its image
directory (the launch directory for an empty image) and runs the entrypoint as given
(looked up on ``PATH``).
"""

from __future__ import annotations

import abc
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torchx.specs import CfgVal, Role

__all__ = ["CWDImageProvider", "ImageProvider", "LocalDirectoryImageProvider", "ReplicaParam"]


@dataclass
class ReplicaParam:
    """What a role's replicas run (upstream's ``ReplicaParam``), before macros are substituted.

    ``args`` is the command, program first; ``env`` the role's environment; ``cwd`` the
    directory they start in (None: the image's). ``stdout``, ``stderr`` and ``combined``
    are the log files upstream's scheduler wrote to: here each replica's logs are
    ``stdout.log`` and ``stderr.log`` in its log directory, whatever these say, and the
    combined view is made when read.
    """

    args: list[str]
    env: dict[str, str] = field(default_factory=dict)
    stdout: str | None = None
    stderr: str | None = None
    combined: str | None = None
    cwd: str | None = None


class ImageProvider(abc.ABC):
    """Turns a role's image into a directory on this host, and says what to run from it."""

    @abc.abstractmethod
    def fetch(self, image: str) -> str:
        """Makes ``image`` available on this host and returns its directory (``${img_root}``)."""

    def fetch_role(self, role: Role) -> str:
        """The directory of ``role``'s image: :meth:`fetch` of ``role.image``."""
        return self.fetch(role.image)

    def get_cwd(self, image: str) -> str | None:
        """The directory the replicas start in; None: the image's directory."""
        return None

    def get_entrypoint(self, img_root: str, role: Role) -> str:
        """The program a replica of ``role`` runs; by default the entrypoint as given."""
        return role.entrypoint

    def get_replica_param(
        self,
        img_root: str,
        role: Role,
        stdout: str | None = None,
        stderr: str | None = None,
        combined: str | None = None,
    ) -> ReplicaParam:
        """What ``role``'s replicas run from ``img_root`` (its fetched image).

        :meth:`get_entrypoint` and the role's args, its env, and :meth:`get_cwd` of its
        image. The dry run calls this once per role, then substitutes the macros of each
        replica in the args and env it returns.
        """
        return ReplicaParam(
            args=[self.get_entrypoint(img_root, role), *role.args],
            env=dict(role.env),
            stdout=stdout,
            stderr=stderr,
            combined=combined,
            cwd=self.get_cwd(role.image),
        )


class CWDImageProvider(ImageProvider):
    """Runs every role in the current directory, whatever its image says (``local_cwd``).

    For quick iteration: the image is ignored, ``${img_root}`` is the directory the dry
    run was made in, and the entrypoint is run as given.
    """

    def __init__(self, cfg: Mapping[str, CfgVal] | None = None) -> None:
        self.cfg = cfg

    def fetch(self, image: str) -> str:
        return os.getcwd()

    def get_cwd(self, image: str) -> str | None:
        return os.getcwd()


class LocalDirectoryImageProvider(ImageProvider):
    """An image is a directory of this host; entrypoints are resolved against it.

    The replicas start in the image directory, and the entrypoint is a path inside it
    (``image/entrypoint``; an absolute entrypoint stays as it is). An image that is not
    an existing directory is refused at dry run.
    """

    def __init__(self, cfg: Mapping[str, CfgVal] | None = None) -> None:
        self.cfg = cfg

    def fetch(self, image: str) -> str:
        from torchx.specs import SpecError

        if not os.path.isdir(image):
            what = "is a file" if os.path.exists(image) else "does not exist"
            raise SpecError(
                f"image {image!r} {what}: LocalDirectoryImageProvider runs each role from "
                "its image directory; give an existing directory"
            )
        return os.path.abspath(image)

    def get_cwd(self, image: str) -> str | None:
        return os.path.abspath(image)

    def get_entrypoint(self, img_root: str, role: Role) -> str:
        return os.path.join(img_root, role.entrypoint)

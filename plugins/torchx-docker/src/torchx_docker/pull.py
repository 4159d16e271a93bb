"""Images a submit needs and the engine lacks: pulled once per submit, however many
replicas find them missing (:class:`Puller`, used by :mod:`torchx_docker.backend` when a
create answers "no such image")."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import docker


class Puller:
    """Pulls each image at most once per submit, however many replicas find it missing.

    The engine creates containers only from images it has; one a replica needs but the
    engine lacks is pulled from its registry (as ``docker run`` does). A pull that fails
    is remembered, so the other replicas of that image fail at once with the same error.
    """

    def __init__(
        self, api: Callable[[], docker.APIClient], explain: Callable[[str, BaseException], str]
    ) -> None:
        self._api = api  # the SDK's client, made on the first pull
        self._explain = explain  # the one line of a failed pull
        self._lock = threading.Lock()
        self._done: dict[str, BaseException | None] = {}

    def __call__(self, image: str) -> None:
        with self._lock:
            if image not in self._done:
                try:
                    repo, tag = split_image(image)
                    self._api().pull(repo, tag=tag)
                    self._done[image] = None
                except Exception as e:
                    self._done[image] = e
            error = self._done[image]
        if error is not None:
            raise PullError(self._explain(image, error)) from error


class PullError(Exception):
    """An image the engine lacks and could not pull (the message says why)."""


def split_image(image: str) -> tuple[str, str | None]:
    """``repo[:tag]`` or ``repo@digest`` as (repository, tag or digest); no tag: latest."""
    if "@" in image:
        repo, digest = image.split("@", 1)
        return repo, digest
    slash = image.rfind("/")
    colon = image.rfind(":")
    if colon > slash:
        return image[:colon], image[colon + 1 :]
    return image, "latest"

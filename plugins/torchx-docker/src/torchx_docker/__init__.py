"""torchx-docker: the ``docker`` scheduler of TorchX, as a plugin of torchx-runner.

Installing this distribution registers the ``docker`` scheduler (and ``local_docker``,
upstream TorchX's name for it) through the ``torchx`` entry-point group
(:mod:`torchx_docker.plugin`); nothing here is imported until a job goes to Docker.
Every replica of an app runs in a container of its own on one Docker engine (the one
``DOCKER_HOST`` names, else the local socket); the engine keeps all the state, so an
app is followed from any later shell::

    from torchx.runner import get_runner

    with get_runner() as runner:
        handle = runner.run_component(
            "dist.ddp", ["-j", "2x1", "--script", "train.py", "--image", "my/torch:1"], "docker"
        )  # docker://<session>/<app id>

Modules, named as in every TorchX scheduler plugin: :mod:`~torchx_docker.scheduler`
(the Scheduler: which call does what), :mod:`~torchx_docker.options` (run options),
:mod:`~torchx_docker.request` (the containers an app becomes: the dry run's request,
made without the engine), :mod:`~torchx_docker.status` (the engine's answers turned
into replica states), :mod:`~torchx_docker.backend` (every engine call: its clients
and errors), :mod:`~torchx_docker.restart` (the ROLE and APPLICATION retries) and
:mod:`~torchx_docker.logs`; with :mod:`~torchx_docker.labels` (the labels that tie
containers to apps), :mod:`~torchx_docker.wire` (the hot path's HTTP client) and
:mod:`~torchx_docker.images` (workspace images).
"""

from torchx_docker._version import __version__

__all__ = ["__version__"]

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

Modules: :mod:`~torchx_docker.scheduler` (the Scheduler), :mod:`~torchx_docker.options`
(run options), :mod:`~torchx_docker.request` (the containers an app becomes: the dry
run's request, made without the engine), :mod:`~torchx_docker.labels` (the labels that
tie containers to apps) and :mod:`~torchx_docker.engine` (the engine's answers turned
into replica states).
"""

from torchx_docker._version import __version__

__all__ = ["__version__"]

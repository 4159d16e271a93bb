"""torchx-k8s: the ``kubernetes`` and ``kubernetes_mcad`` schedulers of TorchX, as a plugin of
torchx-runner.

Installing this distribution registers the ``kubernetes`` scheduler (and
``kubernetes_mcad``: apps as AppWrappers, :mod:`torchx_k8s.mcad`) through the
``torchx`` entry-point group (:mod:`torchx_k8s.plugin`); nothing here is imported until
a job goes to Kubernetes, and the ``kubernetes`` client only when the API is called.
An app becomes one custom object: a Volcano Job (the default, as upstream TorchX) or a
JobSet (``-cfg flavour=jobset``)::

    from torchx.runner import get_runner

    with get_runner() as runner:
        handle = runner.run_component(
            "dist.ddp", ["-j", "2x1", "--script", "train.py", "--image", "my/torch:1"],
            "kubernetes", {"namespace": "team-a"},
        )  # kubernetes://<session>/team-a:<name>

Modules: :mod:`~torchx_k8s.scheduler` (the Scheduler: which call does what),
:mod:`~torchx_k8s.options` (run options), :mod:`~torchx_k8s.request` (the object an app
becomes, as plain data, made without the client), :mod:`~torchx_k8s.backend` (the API
client per context, its errors, every call), :mod:`~torchx_k8s.logs` (a replica's log),
:mod:`~torchx_k8s.pod` (one replica's pod),
:mod:`~torchx_k8s.names` (app ids, object and pod names), :mod:`~torchx_k8s.labels`,
:mod:`~torchx_k8s.status` (the API's answers turned into the app's status) and
:mod:`~torchx_k8s.rbac` (the permissions the scheduler needs, as a Role manifest); for
``kubernetes_mcad``: :mod:`~torchx_k8s.mcad` (the Scheduler),
:mod:`~torchx_k8s.appwrapper` (the AppWrapper) and :mod:`~torchx_k8s.awstatus` (its states).
"""

from torchx_k8s._version import __version__

__all__ = ["__version__"]

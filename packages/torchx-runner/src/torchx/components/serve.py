"""Built-in components for serving: ``serve.torchserve``.

``torchx run serve.torchserve --model_path model.mar --management_api
http://torchserve:8081`` registers a model archive with a running TorchServe: the
app (``torchx.components._torchserve_app``) serves the archive over HTTP on
``port`` and asks TorchServe's management API to load it from there, then exits
once TorchServe has answered. A ``model_path`` that is a URL (``s3://...``) is
fetched first, which needs the ``fsspec`` package (and its backend) where the app
runs; without it the app fails at once, naming the package. ``--dryrun`` prints
the request instead of sending it.

>>> app = torchserve(model_path="/models/resnet.mar", management_api="http://ts:8081",
...                  params={"initial_workers": "1"})
>>> role = app.roles[0]
>>> app.name, role.name, role.port_map
('torchx-torchserve', 'worker', {'model-download': 8222})
>>> role.args[-2:]
['--initial_workers', '1']
"""

from __future__ import annotations

from torchx.components import DEFAULT_IMAGE
from torchx.specs import AppDef, Resource, Role

__all__ = ["torchserve"]


def torchserve(
    model_path: str,
    management_api: str,
    image: str = DEFAULT_IMAGE,
    params: dict[str, str] | None = None,
    dryrun: bool = False,
    port: int = 8222,
) -> AppDef:
    """Registers a model with a TorchServe through its management API.

    Args:
        model_path: the model archive (.mar): a local path, or a URL fsspec can read
        management_api: TorchServe's management API (e.g. http://torchserve:8081)
        image: image to run on
        params: more query parameters of the registration (e.g. initial_workers=1,batch_size=4)
        dryrun: print the registration request instead of sending it
        port: the port the archive is served on while TorchServe downloads it

    Returns:
        An AppDef ``torchx-torchserve`` with one role, ``worker`` (upstream's names).
    """
    args = [
        "-m",
        "torchx.components._torchserve_app",
        "--model_path",
        model_path,
        "--management_api",
        management_api,
        "--port",
        str(port),
    ]
    if dryrun:
        args.append("--dryrun")
    for key, value in (params or {}).items():
        args += [f"--{key}", str(value)]
    return AppDef(
        name="torchx-torchserve",
        roles=[
            Role(
                name="worker",
                image=image,
                entrypoint="python",
                args=args,
                port_map={"model-download": port},
                resource=Resource(cpu=1, gpu=0, memMB=1024),
            )
        ],
    )

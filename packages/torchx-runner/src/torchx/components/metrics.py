"""Built-in components for metrics: ``metrics.tensorboard``.

``torchx run metrics.tensorboard --logdir /tmp/runs`` starts TensorBoard on the
logs a training job writes, beside that job or on its own. The app is a small
supervisor (``torchx.components._tensorboard_app``) that waits for a start
file if asked, runs TensorBoard, and stops it after ``timeout`` seconds or when an
exit file appears, so TensorBoard ends with the job it watches. Running it needs
the ``tensorboard`` package where the app runs; without it the app fails at once,
saying so (the AppDef itself is built with nothing extra installed).

>>> app = tensorboard(logdir="/tmp/runs", port=6007)
>>> role = app.roles[0]
>>> role.entrypoint, role.port_map
('python', {'http': 6007})
>>> role.args[:2]
['-m', 'torchx.components._tensorboard_app']
"""

from __future__ import annotations

from torchx.components import DEFAULT_IMAGE
from torchx.specs import AppDef, Resource, Role

__all__ = ["tensorboard"]


def tensorboard(
    logdir: str,
    image: str = DEFAULT_IMAGE,
    timeout: float = 60 * 60,
    port: int = 6006,
    start_on_file: str = "",
    exit_on_file: str = "",
) -> AppDef:
    """Runs TensorBoard on a log directory, for a while or until a file appears.

    Args:
        logdir: the directory (or URL TensorBoard reads) holding the event files
        image: image to run on (needs the tensorboard package)
        timeout: seconds after which TensorBoard is stopped
        port: the port TensorBoard serves on (all interfaces)
        start_on_file: wait until this file exists before starting TensorBoard
        exit_on_file: stop TensorBoard once this file exists (the trainer writes it when done)

    Returns:
        An AppDef with one role, ``tensorboard``.
    """
    return AppDef(
        name="tensorboard",
        roles=[
            Role(
                name="tensorboard",
                image=image,
                entrypoint="python",
                args=[
                    "-m",
                    "torchx.components._tensorboard_app",
                    "--timeout",
                    str(timeout),
                    "--start_on_file",
                    start_on_file,
                    "--exit_on_file",
                    exit_on_file,
                    "--",
                    "--bind_all",
                    "--port",
                    str(port),
                    "--logdir",
                    logdir,
                ],
                port_map={"http": port},
                resource=Resource(cpu=1, gpu=0, memMB=1024),
            )
        ],
    )

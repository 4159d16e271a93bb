"""The earlier name ``torchx.schedulers.local_scheduler``, as type checkers see it: :mod:`torchx.schedulers.local.scheduler`.

At run time the name imports that very module (see :mod:`torchx.schedulers`).
"""

from torchx.schedulers.local.scheduler import *  # noqa: F403

"""The earlier name ``torchx.schedulers.local_warmup``, as type checkers see it: :mod:`torchx.schedulers.local.warmup`.

At run time the name imports that very module (see :mod:`torchx.schedulers`).
"""

from torchx.schedulers.local.warmup import *  # noqa: F403

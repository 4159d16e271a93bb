"""The earlier name ``torchx.schedulers.retry``, as type checkers see it: :mod:`torchx.schedulers.helpers.retry`.

At run time the name imports that very module (see :mod:`torchx.schedulers`).
"""

from torchx.schedulers.helpers.retry import *  # noqa: F403

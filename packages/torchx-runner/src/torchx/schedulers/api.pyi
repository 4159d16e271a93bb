"""The earlier name ``torchx.schedulers.api``, as type checkers see it: :mod:`torchx.schedulers.contract.api`.

At run time the name imports that very module (see :mod:`torchx.schedulers`).
"""

from torchx.schedulers.contract.api import *  # noqa: F403

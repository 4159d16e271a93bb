"""The earlier name ``torchx.schedulers.capabilities``, as type checkers see it: :mod:`torchx.schedulers.contract.capabilities`.

At run time the name imports that very module (see :mod:`torchx.schedulers`).
"""

from torchx.schedulers.contract.capabilities import *  # noqa: F403

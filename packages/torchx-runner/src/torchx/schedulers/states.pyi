"""The earlier name ``torchx.schedulers.states``, as type checkers see it: :mod:`torchx.schedulers.contract.states`.

At run time the name imports that very module (see :mod:`torchx.schedulers`).
"""

from torchx.schedulers.contract.states import *  # noqa: F403

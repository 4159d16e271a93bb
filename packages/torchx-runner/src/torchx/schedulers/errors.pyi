"""The earlier name ``torchx.schedulers.errors``, as type checkers see it: :mod:`torchx.schedulers.contract.errors`.

At run time the name imports that very module (see :mod:`torchx.schedulers`).
"""

from torchx.schedulers.contract.errors import *  # noqa: F403

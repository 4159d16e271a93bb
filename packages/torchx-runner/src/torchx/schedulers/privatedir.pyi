"""The earlier name ``torchx.schedulers.privatedir``, as type checkers see it: :mod:`torchx.schedulers.helpers.privatedir`.

At run time the name imports that very module (see :mod:`torchx.schedulers`).
"""

from torchx.schedulers.helpers.privatedir import *  # noqa: F403

"""The earlier name ``torchx.schedulers.follow``, as type checkers see it: :mod:`torchx.schedulers.helpers.follow`.

At run time the name imports that very module (see :mod:`torchx.schedulers`).
"""

from torchx.schedulers.helpers.follow import *  # noqa: F403

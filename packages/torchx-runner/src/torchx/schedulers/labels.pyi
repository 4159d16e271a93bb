"""The earlier name ``torchx.schedulers.labels``, as type checkers see it: :mod:`torchx.schedulers.helpers.labels`.

At run time the name imports that very module (see :mod:`torchx.schedulers`).
"""

from torchx.schedulers.helpers.labels import *  # noqa: F403

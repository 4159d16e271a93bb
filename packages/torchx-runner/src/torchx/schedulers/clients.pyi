"""The earlier name ``torchx.schedulers.clients``, as type checkers see it: :mod:`torchx.schedulers.helpers.clients`.

At run time the name imports that very module (see :mod:`torchx.schedulers`).
"""

from torchx.schedulers.helpers.clients import *  # noqa: F403

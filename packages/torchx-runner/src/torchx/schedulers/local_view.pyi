"""The earlier name ``torchx.schedulers.local_view``, as type checkers see it: :mod:`torchx.schedulers.local.view`.

At run time the name imports that very module (see :mod:`torchx.schedulers`).
"""

from torchx.schedulers.local.view import *  # noqa: F403

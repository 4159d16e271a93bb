"""The earlier name ``torchx.schedulers.quick``, as type checkers see it: :mod:`torchx.schedulers.helpers.quick`.

At run time the name imports that very module (see :mod:`torchx.schedulers`).
"""

from torchx.schedulers.helpers.quick import *  # noqa: F403

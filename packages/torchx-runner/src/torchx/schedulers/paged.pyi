"""The earlier name ``torchx.schedulers.paged``, as type checkers see it: :mod:`torchx.schedulers.helpers.paged`.

At run time the name imports that very module (see :mod:`torchx.schedulers`).
"""

from torchx.schedulers.helpers.paged import *  # noqa: F403

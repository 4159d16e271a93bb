"""The earlier name ``torchx.schedulers.scriptroles``, as type checkers see it: :mod:`torchx.schedulers.helpers.scriptroles`.

At run time the name imports that very module (see :mod:`torchx.schedulers`).
"""

from torchx.schedulers.helpers.scriptroles import *  # noqa: F403

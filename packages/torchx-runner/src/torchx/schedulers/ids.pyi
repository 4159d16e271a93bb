"""The earlier name ``torchx.schedulers.ids``, as type checkers see it: :mod:`torchx.schedulers.helpers.ids`.

At run time the name imports that very module (see :mod:`torchx.schedulers`).
"""

from torchx.schedulers.helpers.ids import *  # noqa: F403

"""The earlier name ``torchx.schedulers.commands``, as type checkers see it: :mod:`torchx.schedulers.helpers.commands`.

At run time the name imports that very module (see :mod:`torchx.schedulers`).
"""

from torchx.schedulers.helpers.commands import *  # noqa: F403

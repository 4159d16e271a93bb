"""The earlier name ``torchx.schedulers.window``, as type checkers see it: :mod:`torchx.schedulers.helpers.window`.

At run time the name imports that very module (see :mod:`torchx.schedulers`).
"""

from torchx.schedulers.helpers.window import *  # noqa: F403

"""The earlier name ``torchx.schedulers.polling``, as type checkers see it: :mod:`torchx.schedulers.helpers.polling`.

At run time the name imports that very module (see :mod:`torchx.schedulers`).
"""

from torchx.schedulers.helpers.polling import *  # noqa: F403

"""The earlier name ``torchx.schedulers.appstore``, as type checkers see it: :mod:`torchx.schedulers.helpers.appstore`.

At run time the name imports that very module (see :mod:`torchx.schedulers`).
"""

from torchx.schedulers.helpers.appstore import *  # noqa: F403

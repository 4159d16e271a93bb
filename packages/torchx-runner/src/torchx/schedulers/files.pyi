"""The earlier name ``torchx.schedulers.files``, as type checkers see it: :mod:`torchx.schedulers.helpers.files`.

At run time the name imports that very module (see :mod:`torchx.schedulers`).
"""

from torchx.schedulers.helpers.files import *  # noqa: F403

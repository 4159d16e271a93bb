"""The earlier name ``torchx.schedulers.merge``, as type checkers see it: :mod:`torchx.schedulers.helpers.merge`.

At run time the name imports that very module (see :mod:`torchx.schedulers`).
"""

from torchx.schedulers.helpers.merge import *  # noqa: F403

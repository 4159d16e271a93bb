"""The earlier name ``torchx.schedulers.replica_errors``, as type checkers see it: :mod:`torchx.schedulers.helpers.replica_errors`.

At run time the name imports that very module (see :mod:`torchx.schedulers`).
"""

from torchx.schedulers.helpers.replica_errors import *  # noqa: F403

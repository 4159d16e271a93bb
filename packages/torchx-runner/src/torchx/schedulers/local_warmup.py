"""Starting the local scheduler's next supervisor ahead of time: ``torchx run`` calls :func:`start`.

This is the name the ``torchx`` command imports; the code is
``torchx.schedulers._local.warmup`` (in the local scheduler's own folder), where its
documentation is. Standard library only, and cheap to import.
"""

from torchx.schedulers._local.warmup import Warm, discard, hand_over, start, supervisor_path, take

__all__ = ["Warm", "discard", "hand_over", "start", "supervisor_path", "take"]

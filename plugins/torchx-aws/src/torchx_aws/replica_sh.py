"""``${replica_id}`` on AWS, where every instance of a role runs the same command.

Neither a Batch node range nor a SageMaker training job can give each instance its own
command line: they run one command on all of them. So the submitted args and env carry
:data:`REPLICA_MARK` where ``${replica_id}`` stood, and a small POSIX ``sh`` wrapper,
run first on each instance, finds the instance's replica id (Batch: its node index;
SageMaker: its host name) and replaces the mark before it ``exec`` s the command.

:data:`SUBSTITUTE` is the part both wrappers share: with ``TORCHX_REPLICA_ID`` set, it
defines ``sub TEXT``, which leaves ``TEXT`` with every mark replaced in ``$out``.
It is kept short: SageMaker takes no environment value over 512 characters, and the
SageMaker wrapper travels as one.

>>> import subprocess
>>> script = SUBSTITUTE + 'sub "a-$1-$1"; printf "%s" "$out"'
>>> subprocess.run(["sh", "-c", script, "x", REPLICA_MARK],
...     env={"TORCHX_REPLICA_ID": "3"}, capture_output=True, text=True).stdout
'a-3-3'
"""

from __future__ import annotations

__all__ = ["REPLICA_MARK", "SUBSTITUTE"]

#: Where ``${replica_id}`` stood in the args and env (replaced on each instance).
REPLICA_MARK = "@@TORCHX_REPLICA_ID@@"

#: ``sub TEXT``: ``$out`` is ``TEXT`` with each :data:`REPLICA_MARK` replaced by
#: ``$TORCHX_REPLICA_ID`` (POSIX ``sh``; uses the names ``mark``, ``out`` and ``rest``).
SUBSTITUTE = (
    f"mark={REPLICA_MARK}\n"
    'sub(){ out=;rest=$1;while :;do case $rest in *"$mark"*)'
    'out=$out${rest%%"$mark"*}$TORCHX_REPLICA_ID;rest=${rest#*"$mark"};;'
    "*)break;;esac;done;out=$out$rest;}\n"
)

"""Structured component arguments: one short option that stands for several values.

Components share these parsers so that the same option means the same thing
everywhere:

* ``-j`` (:func:`parse_nnodes`, :class:`StructuredJArgument`): the job's shape,
  ``NPROC``, ``NNODESxNPROC`` or, for an elastic job, ``MIN:MAXxNPROC``;
* ``--name`` (:class:`StructuredNameArgument`): ``EXPERIMENT/RUN``, where either
  part may be left out and the run name then comes from the script or module.

>>> parse_nnodes("2x4")
(2, 2, 4, '2')
>>> parse_nnodes("1:4x8")
(1, 4, 8, '1:4')
>>> StructuredNameArgument.parse_from("/", script="train/main.py")
StructuredNameArgument(experiment_name='default-experiment', run_name='main')

Bad values raise :class:`~torchx.components.errors.ComponentArgError` naming the
value and the accepted forms.
"""

from __future__ import annotations

import re
from typing import Final

import attrs

from torchx.components.errors import ComponentArgError

__all__ = [
    "DEFAULT_EXPERIMENT_NAME",
    "StructuredJArgument",
    "StructuredNameArgument",
    "parse_nnodes",
]

_J_RE: Final = re.compile(r"(?:([0-9]+)(?::([0-9]+))?x)?([0-9]+)")
_J_FORMS: Final = "NPROC (e.g. 4), NNODESxNPROC (e.g. 2x4) or MIN:MAXxNPROC (e.g. 1:4x8)"

#: The experiment name used when ``--name`` gives none.
DEFAULT_EXPERIMENT_NAME: Final = "default-experiment"


def parse_nnodes(j: str) -> tuple[int, int, int, str]:
    """Parses ``-j`` into ``(min_nnodes, max_nnodes, nproc_per_node, nnodes_rep)``.

    Three forms are accepted:

    * ``P``: one node running ``P`` processes;
    * ``NxP``: ``N`` nodes running ``P`` processes each;
    * ``MIN:MAXxP``: an elastic job of ``MIN`` to ``MAX`` nodes, ``P`` processes each.

    ``nnodes_rep`` is what ``torchrun --nnodes`` takes: ``"N"`` or ``"MIN:MAX"``.
    Every count must be a plain decimal number; a job needs at least one node
    and one process per node, and ``MIN`` may not exceed ``MAX`` (``MIN`` may be
    0: the job then waits until a first node is available).

    >>> parse_nnodes("4")
    (1, 1, 4, '1')
    >>> parse_nnodes("2:3x1")
    (2, 3, 1, '2:3')
    >>> parse_nnodes("2x")
    Traceback (most recent call last):
     ...
    torchx.specs.errors.ComponentArgError: invalid -j '2x': expected NPROC (e.g. 4), NNODESxNPROC (e.g. 2x4) or MIN:MAXxNPROC (e.g. 1:4x8)

    Args:
        j: the ``-j`` value.

    Returns:
        The minimum and maximum node counts, processes per node, and the
        ``--nnodes`` value for torchrun.
    """
    match = _J_RE.fullmatch(j) if isinstance(j, str) else None
    if match is None:
        raise ComponentArgError(f"invalid -j {j!r}: expected {_J_FORMS}")
    first, second, nproc_text = match.groups()
    nproc = int(nproc_text)
    if first is None:
        min_nnodes = max_nnodes = 1
    elif second is None:
        min_nnodes = max_nnodes = int(first)
    else:
        min_nnodes, max_nnodes = int(first), int(second)
    if nproc < 1:
        raise ComponentArgError(
            f"invalid -j {j!r}: the number of processes per node must be at least 1"
        )
    if max_nnodes < 1:
        raise ComponentArgError(f"invalid -j {j!r}: the number of nodes must be at least 1")
    if min_nnodes > max_nnodes:
        raise ComponentArgError(
            f"invalid -j {j!r}: the minimum number of nodes ({min_nnodes}) exceeds "
            f"the maximum ({max_nnodes})"
        )
    rep = str(max_nnodes) if second is None else f"{min_nnodes}:{max_nnodes}"
    return min_nnodes, max_nnodes, nproc, rep


@attrs.frozen
class StructuredJArgument:
    """``-j`` for hosts with GPUs: the process count may be left out and taken from the host.

    ``str()`` gives back a ``-j`` value (``"2x8"`` or ``"1:2x8"``).

    Args:
        nnodes: number of nodes (the maximum for an elastic job)
        nproc_per_node: processes per node
        min_nnodes: minimum number of nodes of an elastic job; ``None`` if not elastic
    """

    nnodes: int
    nproc_per_node: int
    min_nnodes: int | None = None

    def __str__(self) -> str:
        nodes = str(self.nnodes) if self.min_nnodes is None else f"{self.min_nnodes}:{self.nnodes}"
        return f"{nodes}x{self.nproc_per_node}"

    @staticmethod
    def parse_from(h: str, j: str) -> StructuredJArgument:
        """Reads ``-j`` against the named resource ``h``.

        Here a bare number is the number of *nodes* (unlike :func:`parse_nnodes`),
        and each runs one process per GPU of the host. ``NxP`` and ``MIN:MAXxP``
        keep their meaning; a ``P`` that differs from the host's GPU count is
        honoured with a warning.

        >>> str(StructuredJArgument.parse_from("gpu.medium", "3"))
        '3x2'
        >>> str(StructuredJArgument.parse_from("cpu.small", "2x4"))
        '2x4'
        >>> StructuredJArgument.parse_from("cpu.small", "2")
        Traceback (most recent call last):
         ...
        torchx.specs.errors.ComponentArgError: invalid -j '2': 'cpu.small' has no GPUs to count processes by; give -j 2xNPROC (e.g. -j 2x4)

        Args:
            h: a registered named resource (``-h``)
            j: ``NNODES``, ``NNODESxNPROC`` or ``MIN:MAXxNPROC``
        """
        from torchx.specs.resources import get_named_resources

        gpus = get_named_resources(h).gpu
        if isinstance(j, str) and j.isascii() and j.isdigit():
            nnodes = int(j)
            if nnodes < 1:
                raise ComponentArgError(f"invalid -j {j!r}: the number of nodes must be at least 1")
            if gpus <= 0:
                raise ComponentArgError(
                    f"invalid -j {j!r}: {h!r} has no GPUs to count processes by; "
                    f"give -j {nnodes}xNPROC (e.g. -j {nnodes}x4)"
                )
            return StructuredJArgument(nnodes=nnodes, nproc_per_node=gpus)
        if not (isinstance(j, str) and "x" in j):
            raise ComponentArgError(
                f"invalid -j {j!r}: expected NNODES (e.g. 2), NNODESxNPROC (e.g. 2x8) "
                "or MIN:MAXxNPROC (e.g. 1:4x8)"
            )
        min_nnodes, max_nnodes, nproc, rep = parse_nnodes(j)
        if gpus > 0 and nproc != gpus:
            import warnings

            warnings.warn(
                f"-j {j} runs {nproc} processes per node but {h} has {gpus} "
                f"GPU{'s' if gpus != 1 else ''}; "
                f"use -j {rep} to run one process per GPU",
                stacklevel=2,
            )
        return StructuredJArgument(
            nnodes=max_nnodes,
            nproc_per_node=nproc,
            min_nnodes=min_nnodes if ":" in rep else None,
        )


@attrs.frozen
class StructuredNameArgument:
    """``--name``: an experiment name and a run name, written ``EXPERIMENT/RUN``.

    Args:
        experiment_name: groups runs (``default-experiment`` when not given)
        run_name: names this run (and the AppDef)
    """

    experiment_name: str
    run_name: str

    def __str__(self) -> str:
        return f"{self.experiment_name}/{self.run_name}"

    @staticmethod
    def parse_from(
        name: str,
        m: str | None = None,
        script: str | None = None,
        default_experiment_name: str = DEFAULT_EXPERIMENT_NAME,
    ) -> StructuredNameArgument:
        """Splits ``name`` into experiment and run names.

        ``EXP/RUN`` gives both; ``EXP/`` only the experiment; ``/RUN`` or ``RUN``
        only the run; ``/`` neither. A missing run name is the module's last
        part (``-m pkg.train`` gives ``train``) or the script's file name without
        its extension. Exactly one of ``m`` and ``script`` must be given.

        >>> StructuredNameArgument.parse_from("exp/", m="pkg.train")
        StructuredNameArgument(experiment_name='exp', run_name='train')
        >>> StructuredNameArgument.parse_from("trial_1", script="main.py")
        StructuredNameArgument(experiment_name='default-experiment', run_name='trial_1')

        Args:
            name: ``EXP/RUN``, ``EXP/``, ``/RUN``, ``RUN`` or ``/``
            m: the main module, if run by module
            script: the main script, if run by path
            default_experiment_name: the experiment name when ``name`` has none
        """
        if (m is None or m == "") == (script is None or script == ""):
            raise ComponentArgError(
                "exactly one of --script and -m must be given"
                + (f" (got --script {script!r} and -m {m!r})" if m and script else "")
            )
        experiment, slash, run = name.partition("/")
        if not slash:
            experiment, run = "", name
        if not run:
            run = _main_name(script, m)
        return StructuredNameArgument(experiment or default_experiment_name, run)


def _main_name(script: str | None, m: str | None) -> str:
    """``train`` for ``-m pkg.train`` or ``--script path/train.py``."""
    if m:
        return m.rpartition(".")[2]
    base = (script or "").replace("\\", "/").rstrip("/").rpartition("/")[2]
    stem, dot, _ = base.rpartition(".")
    return stem if dot and stem else base

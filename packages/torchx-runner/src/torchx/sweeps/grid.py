"""Turning ``--grid NAME=V1,V2`` and ``--random N --seed S`` into a sweep's trials.

A trial is a mapping from the component's parameter names to the values given on the
command line (strings: the component's own parser converts them, as for ``torchx run``).
Only the standard library is used: the supervisor and the CLI import this.
"""

from __future__ import annotations

import itertools
import re

from torchx.specs.errors import SpecError

__all__ = ["SweepError", "expand", "parse_grid"]

#: A grid's name: a Python identifier, as a component's parameter is.
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class SweepError(SpecError):
    """A sweep that cannot be run as asked (a bad grid, an unknown parameter, no such
    sweep): one line the user can act on."""


def parse_grid(text: str) -> tuple[str, list[str]]:
    """``"lr=1e-3,1e-4"`` as ``("lr", ["1e-3", "1e-4"])``.

    The values are kept as typed (duplicates refused: a trial run twice is a mistake);
    an empty value, a missing ``=`` or a name that is not an identifier is refused in one
    line that quotes what was given.
    """
    name, eq, values = text.partition("=")
    name = name.strip()
    if not eq:
        raise SweepError(f"--grid {text!r}: expected NAME=V1,V2,... (e.g. lr=1e-3,1e-4)")
    if not _NAME.fullmatch(name):
        raise SweepError(f"--grid {text!r}: {name!r} is not a parameter name")
    items = [v.strip() for v in values.split(",")]
    if any(not v for v in items):
        raise SweepError(f"--grid {text!r}: an empty value (expected NAME=V1,V2,...)")
    dup = [v for i, v in enumerate(items) if v in items[:i]]
    if dup:
        raise SweepError(f"--grid {text!r}: the value {dup[0]!r} is given twice")
    return name, items


def expand(
    grids: list[tuple[str, list[str]]], random_n: int | None = None, seed: int | None = None
) -> list[dict[str, str]]:
    """The trials of ``grids``: their cartesian product, in the order given (the last grid
    varies fastest), or ``random_n`` of them sampled without repetition by a
    ``random.Random(seed)`` (so the same seed gives the same trials, in product order).
    """
    names = [n for n, _ in grids]
    dup = [n for i, n in enumerate(names) if n in names[:i]]
    if dup:
        raise SweepError(f"--grid {dup[0]}: given twice (give all its values in one --grid)")
    if not grids:
        raise SweepError("nothing to sweep: give at least one --grid NAME=V1,V2,...")
    trials = [dict(zip(names, combo)) for combo in itertools.product(*(v for _, v in grids))]
    if random_n is None:
        if seed is not None:
            raise SweepError("--seed is for --random N: without it every trial runs")
        return trials
    if random_n < 1:
        raise SweepError(f"--random {random_n}: expected a number of trials of 1 or more")
    if random_n > len(trials):
        raise SweepError(f"--random {random_n}: the grids have only {len(trials)} trials")
    import random  # only here: `torchx list` and `status` import this module too

    picked = sorted(random.Random(seed).sample(range(len(trials)), random_n))
    return [trials[i] for i in picked]

"""The problem and provenance records of the plugin registry: Failure, Clash, PluginDistribution.

Import them from :mod:`torchx.specs.plugins`. They live in their own module so
that a registry read with no failure and no clash (the usual case) does not pay
for defining them; the registry imports this module the first time it needs one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from torchx.specs.hookspecs import HOOKS, IN_PROCESS

if TYPE_CHECKING:  # only annotations: this module never imports the registry's module
    from torchx.specs.plugins import Entry, Kind

_LABELS = {hook.kind: hook.label for hook in HOOKS.values()}


@attrs.frozen
class Failure:
    """A plugin (or one of its hooks) that could not be used, and why, in one line."""

    distribution: str | None
    version: str | None
    group: str
    entry_point: str
    reason: str

    def __str__(self) -> str:
        who = f"{self.distribution} {self.version}".strip() if self.distribution else IN_PROCESS
        return f"{who} (entry point {self.entry_point!r} in group {self.group!r}): {self.reason}"


@attrs.frozen
class Clash:
    """Two or more sources gave the same name for the same kind; ``winner`` is used."""

    name: str
    kind: Kind
    winner: Entry
    losers: tuple[Entry, ...]

    def __str__(self) -> str:
        lost = ", ".join(f"{e.source} ({e.group})" for e in self.losers)
        return (
            f"{_LABELS[self.kind]} {self.name!r} is provided by {self.winner.source} "
            f"({self.winner.group}) and {lost}; using {self.winner.source}"
        )


@attrs.frozen
class PluginDistribution:
    """What one installed distribution declares and contributes (for ``torchx plugins``).

    ``entries`` includes names that lost a clash; ``entry_points`` lists its
    declarations in the groups the registry reads as ``"group: name = value"``.
    """

    name: str
    version: str
    entry_points: tuple[str, ...]
    entries: tuple[Entry, ...]
    failures: tuple[Failure, ...]

"""The local scheduler's run options, declared once: :class:`LocalOpts`.

Every option is a field with its type, default, help and check (see
:mod:`torchx.specs.structured_opts`): ``torchx runopts local``, ``-cfg``,
``.torchxconfig``, the dry run (``torchx.schedulers.local.request``) and ``list``
all read this class. A bad value is refused with one line that names the option and
what would be right.
"""

from __future__ import annotations

from dataclasses import dataclass

from torchx.specs import InvalidRunConfigException
from torchx.specs.structured_opts import StructuredOpts, opt

#: Seconds between SIGTERM and SIGKILL unless ``grace_period`` says otherwise.
DEFAULT_GRACE_PERIOD = 10.0


def check_grace_period(value: float) -> float:
    """``grace_period`` (seconds from SIGTERM to SIGKILL) if it is a number >= 0."""
    grace = float(value)
    if not grace >= 0:  # also refuses NaN
        raise InvalidRunConfigException(
            f"run option 'grace_period' must be a number of seconds >= 0, got {grace!r}"
        )
    return grace


def check_retain_last(value: int) -> int:
    """``retain_last`` if it is a whole number >= 1."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise InvalidRunConfigException(
            f"run option 'retain_last' must be a whole number >= 1 (apps to keep), got {value!r}"
        )
    return value


def check_retain_for(value: str) -> str:
    """``retain_for`` if it is a duration (``12h``, ``7d``); "" is "not set"."""
    if value:
        from torchx.specs.durations import parse_duration

        try:
            parse_duration(value)
        except ValueError as e:
            raise InvalidRunConfigException(f"run option 'retain_for': {e}") from None
    return value


@dataclass(frozen=True, kw_only=True)
class LocalOpts(StructuredOpts):
    """The local scheduler's run options, with their defaults, help and checks."""

    log_dir: str | None = opt(
        help="directory for replica logs (<log_dir>/<app_id>/<role>/<k>/); "
        "default: the app's record directory",
    )
    state_dir: str | None = opt(
        help="directory for the app's records (default: $TORCHX_HOME, "
        "$XDG_STATE_HOME/torchx or ~/.local/state/torchx); a link in the default "
        "one lets its handle find the app from any later process",
    )
    auto_set_cuda_visible_devices: bool = opt(
        False,
        help="give each replica its own GPUs through CUDA_VISIBLE_DEVICES "
        "(resource.gpu of them each); fails if the host has too few",
    )
    prepend_cwd: bool = opt(False, help="put the replica's working directory first on its PATH")
    grace_period: float = opt(
        DEFAULT_GRACE_PERIOD,
        help="seconds between SIGTERM and SIGKILL when cancelling or restarting replicas",
        check=check_grace_period,
    )
    retain_last: int | None = opt(
        help="retention: once the app has ended, remove the finished apps of its state "
        "directory except the newest N (and those retain_for keeps); default: keep all",
        check=check_retain_last,
    )
    retain_for: str | None = opt(
        help="retention: once the app has ended, remove the finished apps of its state "
        "directory that ended longer ago than this (e.g. 12h, 7d; and not kept by "
        "retain_last); default: keep all",
        check=check_retain_for,
    )
    cgroup: bool = opt(
        False,
        help="run the app in a cgroup (v2) of its own where one can be made (root, or a "
        "delegated subtree): all it started dies with it even if its supervisor is "
        "killed; costs 10-30 ms at start",
    )

    def retain_for_seconds(self) -> float | None:
        """``retain_for`` in seconds (None: keep all)."""
        if not self.retain_for:
            return None
        from torchx.specs.durations import parse_duration

        return parse_duration(self.retain_for)

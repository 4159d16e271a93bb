"""The local scheduler's run options: what ``-cfg`` may say, and their values checked.

:func:`run_opts` is what ``torchx runopts local`` prints; :func:`grace_period` and
:func:`retention` turn the values given into what the request holds, refusing a bad one
with one line that names the option and what would be right.
"""

from __future__ import annotations

from collections.abc import Mapping

from torchx.specs import CfgVal, InvalidRunConfigException, runopts


def run_opts() -> runopts:
    """The local scheduler's run options, with their defaults and help."""
    opts = runopts()
    opts.add(
        "log_dir",
        type_=str,
        help="directory for replica logs (<log_dir>/<app_id>/<role>/<k>/); "
        "default: the app's record directory",
    )
    opts.add(
        "state_dir",
        type_=str,
        help="directory for the app's records (default: $TORCHX_HOME, "
        "$XDG_STATE_HOME/torchx or ~/.local/state/torchx); a link in the default "
        "one lets its handle find the app from any later process",
    )
    opts.add(
        "auto_set_cuda_visible_devices",
        type_=bool,
        default=False,
        help="give each replica its own GPUs through CUDA_VISIBLE_DEVICES "
        "(resource.gpu of them each); fails if the host has too few",
    )
    opts.add(
        "prepend_cwd",
        type_=bool,
        default=False,
        help="put the replica's working directory first on its PATH",
    )
    opts.add(
        "grace_period",
        type_=float,
        default=10.0,
        help="seconds between SIGTERM and SIGKILL when cancelling or restarting replicas",
    )
    opts.add(
        "retain_last",
        type_=int,
        help="retention: once the app has ended, remove the finished apps of its state "
        "directory except the newest N (and those retain_for keeps); default: keep all",
    )
    opts.add(
        "retain_for",
        type_=str,
        help="retention: once the app has ended, remove the finished apps of its state "
        "directory that ended longer ago than this (e.g. 12h, 7d; and not kept by "
        "retain_last); default: keep all",
    )
    opts.add(
        "cgroup",
        type_=bool,
        default=False,
        help="run the app in a cgroup (v2) of its own where one can be made (root, or a "
        "delegated subtree): all it started dies with it even if its supervisor is "
        "killed; costs 10-30 ms at start",
    )
    return opts


def grace_period(cfg: Mapping[str, CfgVal]) -> float:
    """The ``grace_period`` run option (seconds from SIGTERM to SIGKILL), checked."""
    grace = cfg.get("grace_period")
    grace = float(grace) if isinstance(grace, int | float) else 10.0
    if not grace >= 0:  # also refuses NaN
        raise InvalidRunConfigException(
            f"run option 'grace_period' must be a number of seconds >= 0, got {grace!r}"
        )
    return grace


def retention(cfg: Mapping[str, CfgVal]) -> tuple[int | None, float | None]:
    """The ``retain_last`` and ``retain_for`` run options, checked (one line if bad)."""
    from torchx.schedulers.local.retention import parse_duration

    last = cfg.get("retain_last")
    if last is not None and (not isinstance(last, int) or isinstance(last, bool) or last < 1):
        raise InvalidRunConfigException(
            f"run option 'retain_last' must be a whole number >= 1 (apps to keep), got {last!r}"
        )
    text = cfg.get("retain_for")
    try:
        keep_for = parse_duration(str(text)) if text not in (None, "") else None
    except ValueError as e:
        raise InvalidRunConfigException(f"run option 'retain_for': {e}") from None
    return last, keep_for

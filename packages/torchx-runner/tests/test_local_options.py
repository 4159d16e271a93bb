"""The local scheduler's run options: declared once (LocalOpts), each value checked in one line."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from torchx.schedulers.local.options import LocalOpts
from torchx.schedulers.local.scheduler import LocalScheduler
from torchx.specs import InvalidRunConfigException


def test_the_scheduler_reads_its_options_from_local_opts() -> None:
    assert LocalScheduler.opts_class is LocalOpts
    assert LocalScheduler("t").run_opts() == LocalOpts.as_runopts()


def test_defaults_and_conversions() -> None:
    opts = LocalOpts.from_cfg(
        LocalOpts.as_runopts().resolve({"retain_for": "1h", "retain_last": 2})
    )
    assert opts.grace_period == 10.0 and opts.retain_last == 2
    assert opts.retain_for_seconds() == 3600.0 and LocalOpts.of(opts) is opts
    assert LocalOpts().retain_for_seconds() is None and LocalOpts.of({}).grace_period == 10.0
    assert LocalOpts.from_cfg({"retain_for": ""}).retain_for_seconds() is None


@pytest.mark.parametrize(
    ("cfg", "message"),
    [
        ({"grace_period": -1.0}, "'grace_period' must be a number of seconds >= 0, got -1.0"),
        ({"grace_period": math.nan}, "'grace_period' must be a number of seconds >= 0"),
        ({"retain_last": 0}, "'retain_last' must be a whole number >= 1 (apps to keep), got 0"),
        ({"retain_for": "soon"}, "run option 'retain_for': bad duration 'soon'"),
    ],
)
def test_a_bad_value_is_one_line(cfg: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidRunConfigException) as info:
        LocalOpts.from_cfg(cfg)  # type: ignore[arg-type]
    assert message in str(info.value) and "\n" not in str(info.value)


@settings(max_examples=200, deadline=None)
@given(
    grace=st.floats(allow_nan=True, allow_infinity=True),
    last=st.integers(-5, 10**6),
    keep=st.text(max_size=12),
)
def test_each_check_accepts_its_own_result_or_refuses_in_one_line(
    grace: float, last: int, keep: str
) -> None:
    for cfg in ({"grace_period": grace}, {"retain_last": last}, {"retain_for": keep}):
        try:
            once = LocalOpts.from_cfg(cfg)  # type: ignore[arg-type]
        except InvalidRunConfigException as e:
            assert "\n" not in str(e) and next(iter(cfg)) in str(e)
            continue
        assert LocalOpts.from_cfg(dict(once)) == once

"""Property tests of the CLI's own parsers: HANDLE[/ROLE[/N,M]] and --since/--until times."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from torchx.cli._runtime import split_handle
from torchx.cli.logs import parse_time
from torchx.cli.main import CliError
from torchx.specs.errors import SpecError

names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-", min_size=1, max_size=12)


@given(names, names, names, st.one_of(st.none(), names), st.lists(st.integers(0, 999), max_size=4))
def test_split_handle_round_trips(
    sched: str, session: str, app: str, role: str | None, ids: list[int]
) -> None:
    handle = f"{sched}://{session}/{app}"
    text = handle
    if role is not None:
        text += f"/{role}"
        if ids:
            text += "/" + ",".join(map(str, ids))
    got = split_handle(text)
    assert (got, got.role, got.replica_ids) == (
        handle,
        role,
        ids if role is not None and ids else None,
    )
    assert got.parsed == (sched, session, app)  # parsed once: its parts are carried


@given(st.text(max_size=30))
def test_split_handle_never_crashes(text: str) -> None:
    try:
        split_handle(text)
    except CliError as e:  # the one user error it raises: one line saying what is expected
        assert "\n" not in str(e) and "expected" in str(e)


@given(
    st.lists(st.tuples(st.integers(0, 1000), st.sampled_from("smhd")), min_size=1, max_size=3),
    st.sampled_from(["", " ago"]),
)
def test_durations_are_times_ago(parts: list[tuple[int, str]], ago: str) -> None:
    seconds = sum({"s": 1, "m": 60, "h": 3600, "d": 86400}[unit] * n for n, unit in parts)
    got = parse_time("".join(f"{n}{unit}" for n, unit in parts) + ago)
    assert abs((datetime.now() - timedelta(seconds=seconds) - got).total_seconds()) < 5


@given(st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(2100, 1, 1)))
def test_iso_times_round_trip(when: datetime) -> None:
    assert parse_time(when.isoformat()) == when


@given(st.text(max_size=20))
def test_bad_times_are_one_line_errors(text: str) -> None:
    try:
        parse_time(text)
    except SpecError as e:  # one line, exit 2 in the CLI
        assert "\n" not in str(e) and "expected ISO 8601" in str(e)


@given(st.floats(0, 10**8, allow_nan=False))
def test_durations_shown_read_back_with_the_one_parser(seconds: float) -> None:
    from torchx.cli.output import format_duration
    from torchx.specs.durations import parse_duration

    back = parse_duration(format_duration(seconds))
    if seconds < 60:  # a tenth of a second kept
        assert abs(back - seconds) <= 0.05 + 1e-9
    else:  # the two largest units kept: never more, less by under a day
        assert 0 <= seconds - back < 86400


@given(st.floats(0, 4 * 10**9, allow_nan=False))
def test_times_shown_are_local_times_to_the_second(epoch: float) -> None:
    from torchx.cli.output import format_time

    assert format_time(epoch) == datetime.fromtimestamp(int(epoch)).isoformat(" ", "seconds")


def test_bad_replica_ids() -> None:
    with pytest.raises(CliError, match="bad replica ids"):
        split_handle("local://s/app/role/a,b")
    with pytest.raises(CliError, match="HANDLE"):
        split_handle("local://s/app/role/0/extra")


@pytest.mark.parametrize("bad", ["local", "local://", "local://s", "local://s/", "local://s//w"])
def test_bad_handles_name_the_form(bad: str) -> None:
    with pytest.raises(CliError) as e:
        split_handle(bad)
    assert str(e.value) == (
        f"bad handle {bad!r}: expected HANDLE[/ROLE[/N,M]], HANDLE being "
        "{scheduler}://{session_name}/{app_id}, e.g. local://torchx/echo-k3x9q2m7bw/echo/0,1"
    )


@pytest.mark.parametrize(
    ("argv", "local"),
    [
        (["run", "utils.echo"], True),
        (["run", "--wait", "--log", "utils.sh", "-s", "x"], True),  # the component's -s
        (["run", "-s", "local", "utils.echo"], True),
        (["run", "-s", "local_cwd", "utils.echo"], True),
        (["run", "--scheduler=local", "utils.echo"], True),
        (["run", "-slocal", "utils.echo"], True),
        (["run", "-cfg", "log_dir=/tmp", "utils.echo"], True),
        (["--log_level", "INFO", "run", "utils.echo"], True),
        (["run", "-s", "slurm", "utils.echo"], False),
        (["run", "--scheduler", "kubernetes", "utils.echo"], False),
        (["run", "--dryrun", "utils.echo"], False),
        (["run", "--help"], False),
        (["run", "-cfg", "-s", "utils.echo"], True),  # -s is -cfg's value here
    ],
)
def test_torchx_run_guesses_a_local_app_before_parsing(argv: list[str], local: bool) -> None:
    """The guess that starts a local supervisor ahead (torchx.schedulers.local.warmup)."""
    from torchx.cli._startup import may_run_locally

    assert may_run_locally(argv) is local


@given(
    st.lists(
        st.sampled_from(
            [
                "run",
                "-s",
                "--scheduler",
                "-cfg",
                "--dryrun",
                "local",
                "x",
                "--scheduler=slurm",
                "-slocal",
                "--wait",
                "=",
            ]
        )
        | st.text(max_size=8),
        max_size=8,
    )
)
def test_the_local_guess_never_fails(argv: list[str]) -> None:
    from torchx.cli._startup import may_run_locally

    assert may_run_locally(argv) in (True, False)

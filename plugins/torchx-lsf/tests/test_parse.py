"""bjobs output read back: the documented answers, and any record (hypothesis)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from torchx_lsf.commands import is_no_job
from torchx_lsf.parse import (
    BJOBS_FORMAT,
    FIELDS,
    SEP,
    first_host,
    parse_bjobs,
    parse_time,
    replica_exit_code,
)

from torchx.specs import AppState

FIXTURES = Path(__file__).parent / "fixtures"


def test_the_format_asks_for_the_fields_in_order() -> None:
    assert BJOBS_FORMAT == (
        "jobid stat proj_name exit_code exec_host job_name start_time finish_time output_dir"
        " delimiter='|'"
    )


def test_ibm_docs_messages_are_never_jobs() -> None:
    """From IBM's documentation (lsf.conf LSB_BJOBS_CONSISTENT_EXIT_CODE): no record."""
    text = (FIXTURES / "bjobs_messages_from_ibm_docs.txt").read_text()
    assert parse_bjobs(text) == []
    lines = text.splitlines()
    assert is_no_job(lines[2]) and is_no_job(lines[3])
    assert not is_no_job(lines[1])


def test_records_written_from_ibm_docs_syntax() -> None:
    recs = parse_bjobs((FIXTURES / "bjobs_o_from_ibm_docs_syntax.txt").read_text())
    assert [r.job_id for r in recs] == ["2051", "2052", "2053", "2054", "2060"]
    done, failed, run, pend, other = recs
    assert (done.role, done.replica_id, done.app_state, replica_exit_code(done)) == (
        "worker", 0, AppState.SUCCEEDED, 0,
    )  # fmt: skip
    assert (failed.app_state, replica_exit_code(failed), failed.exec_host) == (
        AppState.FAILED, 3, "hostB",
    )  # fmt: skip
    assert (run.role, run.app_state, replica_exit_code(run)) == ("ps", AppState.RUNNING, None)
    assert (pend.exec_host, pend.app_state) == ("", AppState.PENDING)
    assert done.output_dir == "/shared/jobs/.torchx-lsf/trainer-x7k2p9q1z0"
    assert done.start_time is not None and done.finish_time is not None
    assert done.finish_time - done.start_time == 240
    assert run.finish_time is None and pend.start_time is None
    assert other.replica is None and other.output_dir == ""  # not a torchx job


def test_unknown_states_are_unknown() -> None:
    [rec] = parse_bjobs("7|ZOMBI|p|-|-|p-r-0|-|-|-\n")
    assert rec.app_state == AppState.UNKNOWN


def test_exec_host_forms() -> None:
    assert first_host("hostA") == "hostA"
    assert first_host("4*hostA:2*hostB") == "hostA"
    assert first_host("-") == "" and first_host("") == ""


_TEXT = st.text(
    alphabet=st.characters(blacklist_characters=f"{SEP}\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"),
    min_size=1,
).filter(lambda s: s.strip() not in ("", "-") and s == s.strip())
_NAME = st.from_regex(r"[a-z0-9][a-z0-9_.\-]{0,30}", fullmatch=True)


@given(
    job_id=st.integers(min_value=1, max_value=10**9),
    state=st.sampled_from(["PEND", "RUN", "DONE", "EXIT", "PSUSP", "USUSP", "SSUSP", "UNKWN"]),
    project=_NAME,
    role=_NAME,
    k=st.integers(min_value=0, max_value=10_000),
    code=st.one_of(st.none(), st.integers(min_value=0, max_value=255)),
    host=st.from_regex(r"[a-z][a-z0-9.\-]{0,20}", fullmatch=True),
    outdir=st.text(
        alphabet=st.characters(blacklist_characters="\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"),
        max_size=40,
    ),
)
def test_any_record_reads_back(
    job_id: int,
    state: str,
    project: str,
    role: str,
    k: int,
    code: int | None,
    host: str,
    outdir: str,
) -> None:
    fields = [str(job_id), state, project, "-" if code is None else str(code), f"2*{host}",
              f"{project}-{role}-{k}", "Jan 02 03:04 2026", "-", outdir or "-"]  # fmt: skip
    assert len(fields) == len(FIELDS)
    [rec] = parse_bjobs("No job found\n" + SEP.join(fields) + "\n")
    assert rec.job_id == str(job_id) and rec.state == state and rec.project == project
    assert rec.exit_code == code and rec.exec_host == host
    assert rec.replica == (role, k)
    assert rec.start_time is not None and rec.finish_time is None
    assert rec.output_dir == ("" if outdir.strip() in ("", "-") else outdir.strip())


@given(st.text())
def test_any_text_parses_without_error(text: str) -> None:
    for rec in parse_bjobs(text):
        assert rec.job_id.split("[")[0].isdigit()


def test_a_time_without_a_year_is_never_far_in_the_future() -> None:
    import time

    now = time.mktime((2026, 1, 1, 0, 30, 0, 0, 0, -1))
    dec = parse_time("Dec 31 23:50", now=now)  # last year's, not this year's
    assert dec is not None and time.localtime(dec)[:3] == (2025, 12, 31)
    jan = parse_time("Jan 01 00:10", now=now)
    assert jan is not None and time.localtime(jan)[:3] == (2026, 1, 1)


@given(st.text(max_size=30))
def test_any_time_text_is_a_time_or_none(text: str) -> None:
    value = parse_time(text)
    assert value is None or isinstance(value, float)

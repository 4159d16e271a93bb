"""Parsers of squeue/sacct output, field by field, and hypothesis properties (never raise).

Fixture provenance (see fixtures/README.md): the ``*_22_05`` texts have the shape Slurm
22.05 (Debian bookworm's slurm-client 22.05.8) prints for the formats the scheduler asks
for; the ``*_captured.json`` files were captured from a real 22.05.8 cluster (data parser
v0.0.38: plain numbers, ``job_state`` a string, squeue's ``exit_code`` a raw wait status).
The ``*_newer_from_docs`` fixtures are WRITTEN FROM DOCUMENTATION, not captured: Slurm's data parser
v0.0.40+ (23.11 and later: numbers as ``{"set", "infinite", "number"}``, states as lists
of strings, ``exit_code`` as ``{"status", "return_code", "signal"}``), as Slurm's REST
API reference and the output quoted in upstream TorchX issue #1101 (Slurm 24.11) show.
"""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import example, given
from hypothesis import strategies as st
from torchx_slurm.parse import (
    SEP,
    SLURM_STATES,
    JobRecord,
    app_state,
    decode_wait_status,
    normalize_state,
    parse_sacct_json,
    parse_sacct_text,
    parse_squeue_json,
    parse_squeue_text,
)

from torchx.specs import AppState

FIXTURES = Path(__file__).parent / "fixtures"

SQUEUE_TEXT_22_05 = (
    SEP.join(["17+0", "RUNNING", "alice", "n1", "None", "train-ab12:trainer:0", "/home/a/job"])
    + "\n"
    + SEP.join(["17+1", "RUNNING", "alice", "n2", "None", "train-ab12:trainer:1", "/home/a/job"])
    + "\n"
    + SEP.join(["18", "PENDING", "alice", "", "Resources", "echo-1:echo:0", "/tmp/a|b"])
    + "\n"
)

SACCT_TEXT_22_05 = (
    SEP.join(["21+0", "FAILED", "3:0", "alice", "n1", "None", "t-1:w:0", "/j"])
    + "\n"
    + SEP.join(["21+0.batch", "FAILED", "3:0", "", "n1", "", "batch", ""])
    + "\n"
    + SEP.join(["21+1", "CANCELLED by 1000", "0:15", "alice", "n2", "None", "t-1:w:1", "/j"])
    + "\n"
)

# sacct -c (jobcomp/filetxt): the user column is "name(uid)"
SACCT_COMPLETION_22_05 = SEP.join(["7", "COMPLETED", "0:0", "root(0)", "n1", "", "e:x:0", "/j"])


def test_squeue_text_field_by_field() -> None:
    a, b, c = parse_squeue_text(SQUEUE_TEXT_22_05)
    assert a == JobRecord(
        job_id="17",
        offset=0,
        state="RUNNING",
        name="train-ab12:trainer:0",
        user="alice",
        nodes="n1",
        reason="",
        work_dir="/home/a/job",
    )
    assert (b.job_id, b.offset, b.nodes) == ("17", 1, "n2")
    assert (c.job_id, c.offset, c.state, c.nodes, c.reason, c.work_dir) == (
        "18",
        0,
        "PENDING",
        "",
        "Resources",
        "/tmp/a|b",
    )


def test_sacct_text_skips_steps_and_reads_exit_codes() -> None:
    a, b = parse_sacct_text(SACCT_TEXT_22_05)
    assert (a.job_id, a.offset, a.state, a.exit_code, a.user, a.name) == (
        "21",
        0,
        "FAILED",
        3,
        "alice",
        "t-1:w:0",
    )
    assert (b.offset, b.state, b.exit_code) == (1, "CANCELLED", 128 + 15)


def test_sacct_completion_file_user() -> None:
    [rec] = parse_sacct_text(SACCT_COMPLETION_22_05)
    assert (rec.job_id, rec.user, rec.state, rec.exit_code) == ("7", "root", "COMPLETED", 0)


def test_squeue_json_22_05_captured() -> None:
    jobs = parse_squeue_json((FIXTURES / "squeue_v0.0.38_22_05_captured.json").read_text())
    assert [(j.job_id, j.offset, j.state, j.name) for j in jobs] == [
        ("52", k, "PENDING", name)
        for k, name in enumerate(
            [
                "kit-cf0a44cf:alpha:0",
                "kit-cf0a44cf:alpha:1",
                "kit-cf0a44cf:beta:0",
                "kit-cf0a44cf:beta:1",
            ]
        )
    ]
    first = jobs[0]
    assert first.user == "root"
    assert first.nodes == ""
    assert first.reason == "Resources"
    assert first.exit_code == 0 and first.restarts == 0
    assert first.work_dir.endswith("/test_two_roles_of_n_replicas_w0/jobs")


def test_raw_wait_status_of_squeue_json_22_05() -> None:
    # squeue --json of 22.05 gives the raw wait status: 768 is "exited with 3"
    job = {"job_id": 9, "job_state": "FAILED", "exit_code": 768}
    [rec] = parse_squeue_json(json.dumps({"jobs": [job]}))
    assert rec.exit_code == 3


def test_squeue_json_newer_written_from_docs() -> None:
    jobs = parse_squeue_json((FIXTURES / "squeue_v0.0.40_newer_from_docs.json").read_text())
    assert [(j.job_id, j.offset, j.state, j.exit_code, j.restarts) for j in jobs] == [
        ("40", 0, "RUNNING", None, 0),
        ("40", 1, "COMPLETED", 0, 0),
        ("42", 0, "FAILED", 137, 2),
    ]


def test_sacct_json_22_05_captured() -> None:
    jobs = parse_sacct_json((FIXTURES / "sacct_v0.0.38_22_05_captured.json").read_text())
    assert [(j.job_id, j.offset, j.state, j.name) for j in jobs] == [
        ("36", 0, "REQUEUED", "flaky-2941293b:flaky:0"),
        ("36", 0, "COMPLETED", "flaky-2941293b:flaky:0"),
        ("44", 0, "CANCELLED", "sh-5de2ae09:sh:0"),
        ("48", 0, "COMPLETED", "kit-e517a1e3:main:0"),
        ("48", 1, "COMPLETED", "kit-e517a1e3:main:1"),
        ("51", 0, "FAILED", "kit-a28a568f:bad:0"),
    ]
    assert jobs[3].user == "root" and jobs[3].nodes == "n1" and jobs[4].nodes == "n2"
    assert jobs[3].work_dir.endswith("/test_describe_gives_every_repl0/jobs")


def test_sacct_json_newer_written_from_docs() -> None:
    new = parse_sacct_json((FIXTURES / "sacct_v0.0.40_newer_from_docs.json").read_text())
    assert [(j.job_id, j.offset, j.state, j.exit_code, j.reason) for j in new] == [
        ("60", 0, "CANCELLED", 143, ""),
        ("61", 0, "TIMEOUT", 0, "TimeLimit"),
    ]


def test_states() -> None:
    assert normalize_state("CANCELLED by 1000") == "CANCELLED"
    assert normalize_state(["PENDING", "REQUEUED"]) == "PENDING"
    assert normalize_state("CD") == "COMPLETED"
    assert normalize_state([]) == ""
    assert app_state("COMPLETING") == AppState.RUNNING
    assert app_state("SOMETHING_NEW") == AppState.UNKNOWN
    # every state squeue(1) and sacct(1) of 22.05 document is mapped
    documented = {
        "BOOT_FAIL",
        "CANCELLED",
        "COMPLETED",
        "COMPLETING",
        "CONFIGURING",
        "DEADLINE",
        "FAILED",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PENDING",
        "PREEMPTED",
        "REQUEUED",
        "REQUEUE_FED",
        "REQUEUE_HOLD",
        "RESIZING",
        "RESV_DEL_HOLD",
        "REVOKED",
        "RUNNING",
        "SIGNALING",
        "SPECIAL_EXIT",
        "STAGE_OUT",
        "STOPPED",
        "SUSPENDED",
        "TIMEOUT",
    }
    assert documented <= set(SLURM_STATES)
    assert all(state != AppState.UNKNOWN for state in SLURM_STATES.values())


def test_wait_status() -> None:
    assert decode_wait_status(3 << 8) == 3
    assert decode_wait_status(15) == 143
    assert decode_wait_status(0) == 0


# -- properties: any input parses without raising ------------------------------------------

_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200)


@given(_text)
def test_text_parsers_never_raise(text: str) -> None:
    for rec in parse_squeue_text(text) + parse_sacct_text(text):
        assert rec.job_id and rec.offset >= 0


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "jobs",
                    "job_id",
                    "het_job_id",
                    "het_job_offset",
                    "job_state",
                    "exit_code",
                    "return_code",
                    "signal",
                    "state",
                    "current",
                    "het",
                    "job_offset",
                    "set",
                    "number",
                    "infinite",
                    "name",
                    "user",
                ]
            ),
            inner,
            max_size=6,
        )
    ),
    max_leaves=30,
)


@given(_json)
@example({"jobs": [{"job_id": -1}]})  # found by hypothesis: no job is named -1
def test_json_parsers_never_raise(data: object) -> None:
    text = json.dumps(data)
    for rec in parse_squeue_json(text) + parse_sacct_json(text):
        assert rec.job_id.isdigit()
        assert isinstance(rec.state, str)


@given(
    st.lists(
        st.tuples(
            st.integers(1, 10**9),
            st.integers(0, 200),
            st.sampled_from(sorted(SLURM_STATES)),
            st.text(
                alphabet=st.characters(
                    blacklist_characters="\x1f\n\r", blacklist_categories=("Cs", "Cc")
                ),
                max_size=30,
            ),
        ),
        max_size=20,
    )
)
def test_squeue_text_round_trip(rows: list[tuple[int, int, str, str]]) -> None:
    text = "".join(
        SEP.join([f"{j}+{o}", s, "u", "n1", "None", name, f"/d/{name}"]) + "\n"
        for j, o, s, name in rows
    )
    parsed = parse_squeue_text(text)
    assert [(r.job_id, r.offset, r.state, r.name, r.work_dir) for r in parsed] == [
        (str(j), o, s, name, f"/d/{name}") for j, o, s, name in rows
    ]

"""The local scheduler and why a replica failed: its elastic error file, and programs
that are not there refused at dryrun (torchx.schedulers.local.programs)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from torchx.schedulers.contract.api import DescribeAppResponse
from torchx.schedulers.helpers.replica_errors import ERROR_FILE_ENV
from torchx.schedulers.local.scheduler import LocalScheduler
from torchx.specs import NONE, AppDef, AppState, Role, SpecError

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the local scheduler is Linux-only")


def sh(name: str, script: str, replicas: int = 1, **kw: Any) -> Role:
    return Role(name, image="/", entrypoint="sh", args=["-c", script], num_replicas=replicas, **kw)


def run(sched: LocalScheduler, *roles: Role) -> str:
    return sched.submit(AppDef("app", list(roles)), {})


def wait(sched: LocalScheduler, app_id: str, role: str = "w") -> DescribeAppResponse:
    """Blocks until the app has ended (by following its first replica's log)."""
    for _ in sched.log_iter(app_id, role, 0, should_tail=True):
        pass
    desc = sched.describe(app_id)
    assert desc is not None and desc.state.is_terminal(), desc
    return desc


RECORD = {"message": {"message": "ValueError: bad batch on rank 1", "extraInfo": {"x": "1"}}}


def test_each_replica_gets_its_own_error_file_which_describe_reads(
    sched: LocalScheduler, tmp_path: Path
) -> None:
    # what torchrun (or @record) does: write the exception to $TORCHELASTIC_ERROR_FILE.
    # Replica 1 fails only once 0 and 2 have printed their paths (each touches a marker
    # after its echo): its failure ends the app and stops them, which under load could
    # otherwise come before they printed anything.
    script = (
        f'echo "$TORCHELASTIC_ERROR_FILE" ; touch {tmp_path}/"$TORCHX_REPLICA_ID" ; '
        f'if [ "$TORCHX_REPLICA_ID" = 1 ]; then '
        f"while [ ! -e {tmp_path}/0 ] || [ ! -e {tmp_path}/2 ]; do sleep 0.01; done ; "
        f"printf '%s' '{json.dumps(RECORD)}' > \"$TORCHELASTIC_ERROR_FILE\"; exit 1; fi"
    )
    app_id = run(sched, sh("w", script, replicas=3))
    desc = wait(sched, app_id)
    assert desc.state == AppState.FAILED
    reps = {r.id: r for r in desc.roles_statuses[0].replicas}
    assert json.loads(reps[1].structured_error_msg) == RECORD
    assert reps[0].structured_error_msg == NONE  # not FAILED (cancelled or succeeded)
    paths = {k: "".join(sched.log_iter(app_id, "w", k)).strip() for k in range(3)}
    assert len(set(paths.values())) == 3  # one file per replica
    assert all(p.endswith(f"/w/{k}/error.json") for k, p in paths.items())


def test_the_launchers_own_error_file_is_not_the_replicas(
    sched: LocalScheduler, monkeypatch: pytest.MonkeyPatch
) -> None:
    from torchx.schedulers.local import records

    assert records.ERROR_FILE_ENV == ERROR_FILE_ENV  # the supervisor's copy of the name
    # torchx run from inside a torchrun job: the launcher has a file of its own
    monkeypatch.setenv(ERROR_FILE_ENV, "/tmp/the-launchers.json")
    app_id = run(sched, sh("w", 'echo "$TORCHELASTIC_ERROR_FILE"'))
    wait(sched, app_id)
    assert "".join(sched.log_iter(app_id, "w", 0)).strip().endswith("/w/0/error.json")


def test_a_failed_replica_without_an_error_file_has_none(sched: LocalScheduler) -> None:
    desc = wait(sched, run(sched, sh("w", "echo oops >&2; exit 2")))
    (rep,) = desc.roles_statuses[0].replicas
    assert rep.state == AppState.FAILED and rep.structured_error_msg == NONE


def test_a_roles_own_error_file_is_kept(sched: LocalScheduler, tmp_path: Path) -> None:
    own = tmp_path / "mine.json"
    app_id = run(sched, sh("w", 'echo "$TORCHELASTIC_ERROR_FILE"', env={ERROR_FILE_ENV: str(own)}))
    wait(sched, app_id)
    assert "".join(sched.log_iter(app_id, "w", 0)).strip() == str(own)


def test_a_retry_does_not_inherit_the_error_of_an_earlier_attempt(
    sched: LocalScheduler, tmp_path: Path
) -> None:
    marker = tmp_path / "second"
    script = (
        f"if [ -e {marker} ]; then exit 5; fi; touch {marker}; "
        f"printf '%s' '{json.dumps(RECORD)}' > \"$TORCHELASTIC_ERROR_FILE\"; exit 1"
    )
    desc = wait(sched, run(sched, sh("w", script, max_retries=1)))
    (rep,) = desc.roles_statuses[0].replicas
    assert (rep.state, rep.exit_code) == (AppState.FAILED, 5)
    assert rep.structured_error_msg == NONE


def _ddp_like(path: str) -> Role:
    return Role(
        "trainer",
        image="/",
        entrypoint="bash",
        args=["-c", "torchrun --nnodes 1 --nproc_per_node 2 train.py"],
        env={"PATH": path},
    )


def test_torchrun_missing_is_refused_when_submitted_not_at_dryrun(
    sched: LocalScheduler, tmp_path: Path, state_dir: Path
) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    path = f"{empty}{os.pathsep}/usr/bin{os.pathsep}/bin"
    if (Path(sys.executable).parent / "torchrun").exists():
        pytest.skip("torch is installed beside this Python: torchrun is found there")
    app = AppDef("ddp", [_ddp_like(path)])
    sched.submit_dryrun(app, {})  # looking at the request is fine
    with pytest.raises(SpecError) as info:
        sched.submit(app, {})
    assert str(info.value) == (
        "role 'trainer': 'torchrun' (the first command of its bash script) is not on the "
        "PATH its replicas get: it comes with PyTorch: pip install torch"
    )
    assert not (state_dir / "apps").exists() or not list((state_dir / "apps").iterdir())
    (empty / "torchrun").write_text("#!/bin/sh\n")
    (empty / "torchrun").chmod(0o755)
    wait(sched, sched.submit(app, {}), role="trainer")  # found now (and it runs)


@pytest.mark.parametrize(
    ("entrypoint", "args", "env", "refused"),
    [
        ("no-such-program-x", [], {}, "'no-such-program-x' is not on the PATH"),
        ("sh", ["-c", "no-such-program-x --flag"], {}, "'no-such-program-x' (the first command"),
        ("sh", ["-c", "exit 3"], {}, None),  # a builtin
        ("sh", ["-c", "A=1 no-such-program-x"], {}, None),  # an assignment first: not looked up
        ("sh", ["-c", "$CMD"], {}, None),  # computed
        ("sh", ["-c", "'unterminated"], {}, None),  # the shell says what is wrong
        ("/no/such/program", [], {}, None),  # a path: left to fail at launch (127)
        ("sh", ["-x", "script.sh"], {}, None),
        ("ls", [], {"PATH": "/nowhere"}, "'ls' is not on the PATH"),  # the role's PATH
        ("ls", [], {"PATH": "../../bin"}, None),  # relative: from the image directory
    ],
)
def test_which_programs_are_looked_up(
    sched: LocalScheduler,
    entrypoint: str,
    args: list[str],
    env: dict[str, str],
    refused: str | None,
) -> None:
    app = AppDef("a", [Role("r", image="/usr/share", entrypoint=entrypoint, args=args, env=env)])
    if refused is None:
        sched.submit(app, {})
    else:
        with pytest.raises(SpecError, match=refused.replace("(", r"\(")):
            sched.submit(app, {})

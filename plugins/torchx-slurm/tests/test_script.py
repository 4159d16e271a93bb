"""The sbatch script, checked line by line, and run for real by bash with a stand-in srun.

Running it proves what reading it cannot: that every user string reaches the program
verbatim (``"; rm -rf ~`` included), that the app id and the rank-0 host are filled in,
that each replica's output lands in its own files and its exit code is recorded, and
that a failure requeues the job while retries are left.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from torchx_slurm.request import RANK0_ENV, UNWRITABLE_EXIT, InvalidAppException, build_request

from torchx.specs import AppDef, Resource, Role, macros, resource
from torchx.specs.errors import InvalidRunConfigException

NASTY = ['"; rm -rf ~', "$(touch pwned)", "`id`", "a'b", "*", "", "x\ny", "$HOME", "\\"]


def _role(**kw: object) -> Role:
    base: dict[str, object] = dict(
        name="trainer",
        image="/nonexistent-image",
        entrypoint="python",
        args=["-c", "print(1)"],
        resource=Resource(cpu=2, gpu=1, memMB=2048),
    )
    base.update(kw)
    return Role(**base)  # type: ignore[arg-type]


def _request(*roles: Role, **kw: object):  # type: ignore[no-untyped-def]
    args: dict[str, object] = dict(job_dir="/jobs/a", job_name="app-1234")
    args.update(kw)
    return build_request(AppDef("app", list(roles) or [_role()]), **args)  # type: ignore[arg-type]


def _header(script: str) -> list[str]:
    return [line for line in script.splitlines() if line.startswith("#SBATCH")]


def test_one_group_per_replica_with_its_resources() -> None:
    req = _request(
        _role(num_replicas=2),
        _role(name="ps", resource=Resource(cpu=1, gpu=0, memMB=512)),
        group_opts=[("partition", "gpu"), ("time", "10")],
        job_opts=[("comment", "hi there")],
    )
    assert _header(req.script) == [
        "#SBATCH --job-name=app-1234:trainer:0",
        "#SBATCH --chdir=/jobs/a",
        "#SBATCH --output=/jobs/a/.torchx-slurm/slurm-%j.out",
        '#SBATCH --comment="hi there"',
        "#SBATCH --nodes=1",
        "#SBATCH --ntasks-per-node=1",
        "#SBATCH --cpus-per-task=2",
        "#SBATCH --mem=2048M",
        "#SBATCH --gpus-per-node=1",
        "#SBATCH --partition=gpu",
        "#SBATCH --time=10",
        "#SBATCH hetjob",
        "#SBATCH --job-name=app-1234:trainer:1",
        "#SBATCH --nodes=1",
        "#SBATCH --ntasks-per-node=1",
        "#SBATCH --cpus-per-task=2",
        "#SBATCH --mem=2048M",
        "#SBATCH --gpus-per-node=1",
        "#SBATCH --partition=gpu",
        "#SBATCH --time=10",
        "#SBATCH hetjob",
        "#SBATCH --job-name=app-1234:ps:0",
        "#SBATCH --nodes=1",
        "#SBATCH --ntasks-per-node=1",
        "#SBATCH --cpus-per-task=1",
        "#SBATCH --mem=512M",
        "#SBATCH --partition=gpu",
        "#SBATCH --time=10",
    ]
    assert [(r.role, r.replica_id, r.group) for r in req.replicas] == [
        ("trainer", 0, 0),
        ("trainer", 1, 1),
        ("ps", 0, 2),
    ]
    runs = [line for line in req.script.splitlines() if line.startswith("  _run ")]
    assert [line.split()[:4] for line in runs] == [
        ["_run", "trainer", "0", "--het-group=0"],
        ["_run", "trainer", "1", "--het-group=1"],
        ["_run", "ps", "0", "--het-group=2"],
    ]
    assert "_state=$_top/$_job\n_logs=$_state\n" in req.script
    assert "_top=/jobs/a/.torchx-slurm\n" in req.script


def test_the_sbatch_header_comes_before_any_command() -> None:
    # sbatch stops reading #SBATCH lines at the first command
    lines = _request(_role(num_replicas=3)).script.splitlines()
    last_directive = max(i for i, line in enumerate(lines) if line.startswith("#SBATCH"))
    assert all(line.startswith("#") or not line.strip() for line in lines[: last_directive + 1])
    assert lines[0] == "#!/bin/bash"
    assert lines[1].startswith("# torchx-slurm script v2:")


def test_a_single_replica_is_a_plain_job() -> None:
    req = _request(_role())
    assert "hetjob" not in req.script
    assert "--het-group" not in req.script


def test_nomem_exclusive_and_extra_args() -> None:
    req = _request(_role(), nomem=True, exclusive=True, extra=["--reservation=maint", "--hold"])
    header = _header(req.script)
    assert not any(line.startswith("#SBATCH --mem") for line in header)
    assert "#SBATCH --exclusive" in header
    assert header[-2:] == ["#SBATCH --reservation=maint", "#SBATCH --hold"]


def test_named_resources_map_to_cpus_mem_and_gpus() -> None:
    res = resource(h="gpu.small")
    header = _header(_request(_role(resource=res)).script)
    assert f"#SBATCH --cpus-per-task={res.cpu}" in header
    assert f"#SBATCH --mem={res.memMB}M" in header
    assert f"#SBATCH --gpus-per-node={res.gpu}" in header
    assert res.gpu > 0 and res.cpu > 0 and res.memMB > 0


def test_no_resource_values_no_resource_lines() -> None:
    req = _request(_role(resource=Resource(cpu=0, gpu=0, memMB=0)))
    assert not any(opt in req.script for opt in ("--cpus-per-task", "--mem", "--gpus-per-node"))


def test_retries_requeue_the_job() -> None:
    assert "scontrol requeue" not in _request(_role()).script
    req = _request(_role(max_retries=2))
    assert req.max_retries == 2
    assert "#SBATCH --requeue" in _header(req.script)
    assert "-lt 2 ]; then" in req.script
    assert 'scontrol requeue "$_job"' in req.script


def test_macros_are_substituted_and_quoted() -> None:
    role = _role(
        image="/",
        args=["--id", macros.app_id, "--r", macros.replica_id, "--root", macros.img_root],
        env={"RANK0": "$$" + macros.rank0_env, "ID": f"x-{macros.app_id}"},
        num_replicas=2,
    )
    req = _request(role)
    r1 = req.replicas[1]
    assert r1.argv[3:] == ["--r", "1", "--root", "/"]
    assert r1.env == {"RANK0": f"${RANK0_ENV}", "ID": "x-\x00app_id\x00"}
    lines = req.script.splitlines()
    at = lines.index(next(line for line in lines if line.startswith("  _run trainer 1 ")))
    run, env = lines[at], lines[at - 1]
    assert ' --id "$_job" ' in run
    assert env.startswith("{ export TORCHX_ROLE_NAME=trainer TORCHX_REPLICA_ID=1 ")
    assert ' ID=x-"$_job"' in env
    assert " RANK0='$TORCHX_RANK0_HOST'" in env


@pytest.mark.parametrize(
    ("role", "message"),
    [
        (_role(name="a b"), "role name 'a b'"),
        (_role(num_replicas=0), "needs at least 1"),
        (_role(entrypoint=""), "has no entrypoint"),
        (_role(env={"1X": "y"}), "env name '1X'"),
        (_role(env={"UID": "7"}), "env name 'UID' is one bash keeps for itself"),
        (_role(args=["a\x00b"]), "NUL"),
    ],
)
def test_bad_apps_are_refused_in_one_line(role: Role, message: str) -> None:
    with pytest.raises(InvalidAppException, match=message) as info:
        _request(role)
    assert "\n" not in str(info.value)


def test_two_roles_with_one_name_are_refused() -> None:
    with pytest.raises(InvalidAppException, match="two roles named 'trainer'"):
        _request(_role(), _role())


@pytest.mark.parametrize("job_dir", ["relative/dir", '/a"b', "/a\nb"])
def test_a_bad_job_dir_is_refused(job_dir: str) -> None:
    with pytest.raises(InvalidRunConfigException, match="job_dir"):
        _request(_role(), job_dir=job_dir)


def test_a_dryrun_of_128_nodes_has_one_group_per_node() -> None:
    # how fast it is built is timed by the bench (slurm.dryrun_ddp_128x8, < 5 ms), not here:
    # an absolute threshold in a unit test fails on a loaded machine
    app = AppDef("big", [_role(num_replicas=128, args=["-c", "x", macros.replica_id])])
    script = build_request(app, job_dir="/j", job_name="big-1").script
    names = [line for line in _header(script) if line.startswith("#SBATCH --job-name=")]
    assert names == [f"#SBATCH --job-name=big-1:trainer:{k}" for k in range(128)]
    assert _header(script).count("#SBATCH hetjob") == 127


# -- the script, run ---------------------------------------------------------------------

# srun stand-in: takes its options up to "--", writes the task's output where
# --output/--error say, runs in --chdir, exports the group number as the local node.
_SRUN = r"""#!{python}
import os, signal, subprocess, sys
args = sys.argv[1:]
if os.environ.get("FAKE_SRUN_ARGV"):  # every srun command line, as ps would show it
    with open(os.environ["FAKE_SRUN_ARGV"], "a") as f:
        f.write(repr(sys.argv) + "\n")
out = err = cwd = None
while args and args[0] != "--":
    opt = args.pop(0)
    if opt.startswith("--output="): out = opt.split("=", 1)[1]
    elif opt.startswith("--error="): err = opt.split("=", 1)[1]
    elif opt.startswith("--chdir="): cwd = opt.split("=", 1)[1]
args.pop(0)
if os.environ.get("SLURM_UMASK"):  # like slurmstepd: the task's umask
    os.umask(int(os.environ["SLURM_UMASK"], 8))
# a backslash in a file name turns srun's %-expansion off and is dropped
out, err = out.replace("\\", ""), err.replace("\\", "")
with open(out, "w") as o, open(err, "w") as e:
    try:
        child = subprocess.Popen(args, stdout=o, stderr=e, cwd=cwd)
    except OSError as exc:  # like slurmstepd: execve failed, the task exits 2
        print("execve(): %s: %s" % (args[0], exc.strerror), file=e)
        sys.exit(2)
    # like srun: a SIGTERM is passed on to the task
    signal.signal(signal.SIGTERM, lambda *_: child.send_signal(signal.SIGTERM))
    code = child.wait()
    sys.exit(code if code >= 0 else 128 - code)
"""

_SCONTROL = r"""#!/bin/sh
echo "$@" >> "$FAKE_SCONTROL_LOG"
if [ "$1" = show ]; then echo n1; echo n2; fi
"""

# the program: prints its argv and some env as JSON; exits with $EXIT_WITH
_PROG = (
    "import json, os, sys; "
    "print(json.dumps({'argv': sys.argv[1:], 'env': {k: os.environ.get(k) for k in "
    "('TORCHX_RANK0_HOST', 'TORCHX_APP_ID', 'TORCHX_JOB_ID', 'TORCHX_ROLE_NAME', "
    "'TORCHX_REPLICA_ID', 'MY_VAR')}, 'cwd': os.getcwd()})); "
    "print('to stderr', file=sys.stderr); "
    "sys.exit(int(os.environ.get('EXIT_WITH', '0')))"
)


@pytest.fixture
def run_script(tmp_path: Path):  # type: ignore[no-untyped-def]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "srun").write_text(_SRUN.format(python=sys.executable))
    (bin_dir / "scontrol").write_text(_SCONTROL)
    for tool in ("srun", "scontrol"):
        (bin_dir / tool).chmod(0o755)
    log = tmp_path / "scontrol.log"

    def run(
        script: str, restart_count: int = 0, umask: int = 0o022
    ) -> subprocess.CompletedProcess[str]:
        env = {
            **os.environ,
            "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
            "SLURM_JOB_ID": "4242",
            "SLURM_JOB_NODELIST_HET_GROUP_0": "n[1-2]",
            "SLURM_RESTART_COUNT": str(restart_count),
            "FAKE_SCONTROL_LOG": str(log),
            "FAKE_SRUN_ARGV": str(tmp_path / "srun-argv.log"),
            "SLURM_UMASK": f"{umask:04o}",  # sbatch gives the batch script the submitter's
        }
        # like sbatch: the script runs in its --chdir
        chdir = next(
            line.split("=", 1)[1].strip('"').replace('\\"', '"').replace("\\\\", "\\")
            for line in script.splitlines()
            if line.startswith("#SBATCH --chdir=")
        )
        return subprocess.run(
            ["bash", "-s"],
            input=script,
            env=env,
            cwd=chdir,
            capture_output=True,
            text=True,
            timeout=60,
        )

    run.scontrol_log = log  # type: ignore[attr-defined]
    run.srun_argv = tmp_path / "srun-argv.log"  # type: ignore[attr-defined]
    return run


def test_every_argument_reaches_the_program_verbatim(tmp_path: Path, run_script) -> None:  # type: ignore[no-untyped-def]
    job_dir = tmp_path / "job dir"
    job_dir.mkdir()
    role = _role(
        entrypoint=sys.executable,
        args=["-c", _PROG, *NASTY, f"id={macros.app_id}", macros.replica_id],
        # TORCHX_JOB_ID as the submit pipeline gives it to every request
        env={"MY_VAR": '"; rm -rf ~ $(id)', "TORCHX_JOB_ID": f"slurm://me/{macros.app_id}"},
        num_replicas=2,
    )
    req = _request(role, job_dir=str(job_dir))
    proc = run_script(req.script)
    assert proc.returncode == 0, proc.stderr
    for k in (0, 1):
        out = (job_dir / f"slurm-4242-trainer-{k}.out").read_text()
        seen = json.loads(out)
        assert seen["argv"] == [*NASTY, "id=4242", str(k)]
        assert seen["env"] == {
            "TORCHX_RANK0_HOST": "n1",
            "TORCHX_APP_ID": "4242",
            "TORCHX_JOB_ID": "slurm://me/4242",
            "TORCHX_ROLE_NAME": "trainer",
            "TORCHX_REPLICA_ID": str(k),
            "MY_VAR": '"; rm -rf ~ $(id)',
        }
        assert seen["cwd"] == str(job_dir)
        assert (job_dir / f"slurm-4242-trainer-{k}.err").read_text() == "to stderr\n"
        assert (job_dir / ".torchx-slurm" / "4242" / f"trainer.{k}.exit").read_text() == "0\n"
    assert (job_dir / ".torchx-slurm" / "4242" / "restarts").read_text() == "0\n"
    assert not (tmp_path / "pwned").exists()


def test_a_failing_replica_fails_the_job_with_its_code(tmp_path: Path, run_script) -> None:  # type: ignore[no-untyped-def]
    role = _role(entrypoint=sys.executable, args=["-c", _PROG], env={"EXIT_WITH": "3"})
    req = _request(role, job_dir=str(tmp_path))
    proc = run_script(req.script)
    assert proc.returncode == 3
    state = tmp_path / ".torchx-slurm" / "4242"
    assert (state / "trainer.0.exit").read_text() == "3\n"
    assert not run_script.scontrol_log.read_text().count("requeue")


def test_a_failure_with_retries_left_requeues(tmp_path: Path, run_script) -> None:  # type: ignore[no-untyped-def]
    role = _role(
        entrypoint=sys.executable, args=["-c", _PROG], env={"EXIT_WITH": "1"}, max_retries=1
    )
    req = _request(role, job_dir=str(tmp_path))
    proc = run_script(req.script, restart_count=0)
    assert proc.returncode == 1
    assert "requeue 4242" in run_script.scontrol_log.read_text()
    assert "requeueing (retry 1 of 1)" in proc.stderr
    # the rerun (SLURM_RESTART_COUNT=1) has no retry left
    run_script.scontrol_log.write_text("")
    proc = run_script(req.script, restart_count=1)
    assert proc.returncode == 1
    assert "requeue" not in run_script.scontrol_log.read_text()
    assert (tmp_path / ".torchx-slurm" / "4242" / "restarts").read_text() == "1\n"


def test_the_first_failure_stops_the_other_replicas(tmp_path: Path, run_script) -> None:  # type: ignore[no-untyped-def]
    sleeper = _role(name="sleeper", entrypoint="sleep", args=["60"])
    failer = _role(name="failer", entrypoint="sh", args=["-c", "exit 5"])
    req = _request(sleeper, failer, job_dir=str(tmp_path))
    proc = run_script(req.script)
    assert proc.returncode == 5
    state = tmp_path / ".torchx-slurm" / "4242"
    assert (state / "failer.0.exit").read_text() == "5\n"
    # stopped (a sleep left to its 60 s exits 0), not waited for: no clock needed
    assert int((state / "sleeper.0.exit").read_text()) != 0


def test_a_replica_that_cannot_start_fails_the_job(tmp_path: Path, run_script) -> None:  # type: ignore[no-untyped-def]
    # exit 127 (command not found) is also what `wait -n` answers when no child is left:
    # the recorded exit code still fails the job
    req = _request(_role(entrypoint="/nonexistent/program", args=[]), job_dir=str(tmp_path))
    proc = run_script(req.script)
    assert proc.returncode == 2
    assert (tmp_path / ".torchx-slurm" / "4242" / "trainer.0.exit").read_text() == "2\n"


def test_all_replicas_succeeding_is_success(tmp_path: Path, run_script) -> None:  # type: ignore[no-untyped-def]
    req = _request(_role(entrypoint="true", args=[], num_replicas=3), job_dir=str(tmp_path))
    proc = run_script(req.script)
    assert proc.returncode == 0, proc.stderr
    state = tmp_path / ".torchx-slurm" / "4242"
    assert sorted(p.name for p in state.glob("*.exit")) == [f"trainer.{k}.exit" for k in range(3)]


# -- a shared job directory; the command lines every user sees ------------------------------


def test_env_values_are_on_no_command_line(tmp_path: Path, run_script) -> None:  # type: ignore[no-untyped-def]
    """``ps`` shows every user each process's command line: values go by the environment."""
    secret = "s3cr3t-token-value"
    role = _role(entrypoint=sys.executable, args=["-c", _PROG], env={"MY_VAR": secret})
    req = _request(role, job_dir=str(tmp_path))
    assert secret in req.script  # exported by the script, which only the user can read
    proc = run_script(req.script)
    assert proc.returncode == 0, proc.stderr
    assert (
        json.loads((tmp_path / "slurm-4242-trainer-0.out").read_text())["env"]["MY_VAR"] == secret
    )
    argv = run_script.srun_argv.read_text()
    assert "--export=ALL" in argv and secret not in argv


def test_an_entrypoint_with_an_equals_sign_is_the_program(tmp_path: Path, run_script) -> None:  # type: ignore[no-untyped-def]
    """``env`` took ``A=1`` for an assignment and ran the first argument instead."""
    canary = tmp_path / "canary"
    req = _request(_role(entrypoint="A=1", args=["touch", str(canary)]), job_dir=str(tmp_path))
    proc = run_script(req.script)
    assert proc.returncode == 2  # the program A=1 does not exist: srun could not run it
    assert not canary.exists()
    assert "A=1" in (tmp_path / "slurm-4242-trainer-0.err").read_text()


def test_carriage_returns_reach_the_program(tmp_path: Path, run_script) -> None:  # type: ignore[no-untyped-def]
    """sbatch refuses a script holding CR LF ("DOS line breaks"): they are escaped."""
    args = ["a\r\nb", "tab\there", "bell\x07", "it's\r"]
    role = _role(entrypoint=sys.executable, args=["-c", _PROG, *args], env={"MY_VAR": "x\r\ny"})
    req = _request(role, job_dir=str(tmp_path))
    assert "\r" not in req.script
    proc = run_script(req.script)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads((tmp_path / "slurm-4242-trainer-0.out").read_text())
    assert seen["argv"] == args and seen["env"]["MY_VAR"] == "x\r\ny"


def test_hash_and_percent_in_the_job_dir(tmp_path: Path, run_script) -> None:  # type: ignore[no-untyped-def]
    job_dir = tmp_path / "run %j #1"
    job_dir.mkdir()
    req = _request(
        _role(entrypoint=sys.executable, args=["-c", _PROG]),
        job_dir=str(job_dir),
        job_opts=[("comment", "hello#world")],
    )
    header = _header(req.script)
    # sbatch's reader of these lines would cut at '#'; %% is a '%' in sbatch's --output
    assert f'#SBATCH --chdir="{job_dir}"' in header
    assert f'#SBATCH --output="{tmp_path}/run %%j #1/.torchx-slurm/slurm-%j.out"' in header
    assert '#SBATCH --comment="hello#world"' in header
    # srun would expand %j in a file name: a backslash turns that off
    assert f"_logs='{tmp_path}/run \\%j #1/.torchx-slurm'/\"$_job\"" in req.script
    proc = run_script(req.script)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((job_dir / "slurm-4242-trainer-0.out").read_text())["cwd"] == str(job_dir)


def test_logs_and_state_are_private_and_linked(tmp_path: Path, run_script) -> None:  # type: ignore[no-untyped-def]
    prog = "import os; m = os.umask(0); print(oct(m))"
    req = _request(_role(entrypoint=sys.executable, args=["-c", prog]), job_dir=str(tmp_path))
    proc = run_script(req.script, umask=0o002)
    assert proc.returncode == 0, proc.stderr
    # the program keeps the submitter's umask (srun gives the task SLURM_UMASK)
    assert (tmp_path / "slurm-4242-trainer-0.out").read_text() == "0o2\n"
    top = tmp_path / ".torchx-slurm"
    state = top / "4242"
    assert [oct(p.stat().st_mode & 0o777) for p in (top, state)] == ["0o700", "0o700"]
    assert (state / "trainer.0.exit").stat().st_mode & 0o777 == 0o600
    assert (state / "restarts").stat().st_mode & 0o777 == 0o600
    link = tmp_path / "slurm-4242-trainer-0.out"
    assert os.readlink(link) == ".torchx-slurm/4242/slurm-4242-trainer-0.out"


def test_shared_logs_are_readable_by_others(tmp_path: Path, run_script) -> None:  # type: ignore[no-untyped-def]
    req = _request(_role(entrypoint="true", args=[]), job_dir=str(tmp_path), shared_logs=True)
    assert run_script(req.script).returncode == 0
    state = tmp_path / ".torchx-slurm" / "4242"
    assert state.stat().st_mode & 0o777 == 0o755
    assert (state / "trainer.0.exit").stat().st_mode & 0o777 == 0o644


def test_links_planted_in_the_job_dir_are_never_written_through(tmp_path: Path, run_script) -> None:  # type: ignore[no-untyped-def]
    victim = tmp_path / "precious"
    victim.write_text("mine\n")
    job_dir = tmp_path / "scratch"
    job_dir.mkdir()
    for name in ("slurm-4242-trainer-0.out", "slurm-4242-trainer-0.err", "slurm-4242.out"):
        (job_dir / name).symlink_to(victim)
    req = _request(_role(entrypoint=sys.executable, args=["-c", _PROG]), job_dir=str(job_dir))
    proc = run_script(req.script)
    assert proc.returncode == 0, proc.stderr
    assert victim.read_text() == "mine\n"
    log = job_dir / ".torchx-slurm" / "4242" / "slurm-4242-trainer-0.out"
    assert json.loads(log.read_text())["argv"] == []


@pytest.mark.parametrize("plant", ["link", "writable"])
def test_a_state_dir_someone_else_could_write_stops_the_job(  # type: ignore[no-untyped-def]
    tmp_path: Path, run_script, plant: str
) -> None:
    """A pre-made .torchx-slurm/<id>/ let another user rewrite the exit codes status reads."""
    attacker = tmp_path / "attacker"
    attacker.mkdir()
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    top = job_dir / ".torchx-slurm"
    if plant == "link":
        top.symlink_to(attacker)
    else:
        top.mkdir()
        top.chmod(0o777)
    canary = tmp_path / "ran"
    req = _request(_role(entrypoint="touch", args=[str(canary)]), job_dir=str(job_dir))
    proc = run_script(req.script)
    assert proc.returncode == 1
    assert "is not a directory of" in proc.stderr and "that only they can write" in proc.stderr
    assert not canary.exists() and list(attacker.iterdir()) == []


def test_a_path_in_the_env_is_the_programs_not_the_scripts(tmp_path: Path, run_script) -> None:  # type: ignore[no-untyped-def]
    """The env is exported before srun runs: srun and ln were found before that."""
    role = _role(entrypoint=sys.executable, args=["-c", _PROG], env={"PATH": "/nonexistent"})
    req = _request(role, job_dir=str(tmp_path))
    proc = run_script(req.script)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "slurm-4242-trainer-0.out").is_symlink()


def test_a_job_dir_that_cannot_be_written_fails_before_any_replica(
    tmp_path: Path, run_script
) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / ".torchx-slurm").mkdir(mode=0o700)
    (tmp_path / ".torchx-slurm" / "4242").write_text("a file where the job's directory goes\n")
    req = _request(_role(entrypoint="touch", args=["ran"]), job_dir=str(tmp_path))
    proc = run_script(req.script)
    assert proc.returncode == UNWRITABLE_EXIT
    assert "torchx: error: cannot write to the job directory" in proc.stderr
    assert not (tmp_path / "ran").exists()


def test_an_exit_code_that_cannot_be_recorded_fails_the_replica(tmp_path: Path, run_script) -> None:  # type: ignore[no-untyped-def]
    # the app succeeds, but its exit code cannot be written (here: its state directory is
    # replaced by a file; on a cluster, a full disk): not a success nobody can see
    sabotage = "rm -rf .torchx-slurm/4242 && touch .torchx-slurm/4242"
    req = _request(_role(entrypoint="sh", args=["-c", sabotage]), job_dir=str(tmp_path))
    proc = run_script(req.script)
    assert proc.returncode == UNWRITABLE_EXIT, proc.stderr
    assert "cannot record the exit code (0) of replica trainer-0" in proc.stderr


def test_a_rerun_keeps_the_log_of_each_attempt_before(tmp_path: Path, run_script) -> None:  # type: ignore[no-untyped-def]
    say = 'echo "attempt $SLURM_RESTART_COUNT"; echo "err $SLURM_RESTART_COUNT" >&2'
    req = _request(_role(entrypoint="sh", args=["-c", say], max_retries=2), job_dir=str(tmp_path))
    for attempt in range(3):
        assert run_script(req.script, restart_count=attempt).returncode == 0
    base = tmp_path / ".torchx-slurm" / "4242" / "slurm-4242-trainer-0"
    assert Path(f"{base}.out").read_text() == "attempt 2\n"
    assert Path(f"{base}.try0.out").read_text() == "attempt 0\n"
    assert Path(f"{base}.try1.out").read_text() == "attempt 1\n"
    assert Path(f"{base}.try1.err").read_text() == "err 1\n"

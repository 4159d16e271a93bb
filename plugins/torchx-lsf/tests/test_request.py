"""The generated bsub commands, job files, environment files and replica scripts.

The scripts are also run here, with bash, the way LSF would run them (the job file's
command, from a private app directory), with a scripted ``bjobs`` on PATH: the program
gets its argv and env verbatim, output goes to the app's files, failures end the others.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from torchx_lsf.request import (
    RANK0_ENV,
    InvalidAppException,
    LsfRequest,
    build_request,
    env_file,
    shell_quote,
)

from torchx.schedulers.testing.fake_tools import FakeTools
from torchx.specs import AppDef, BindMount, DeviceMount, Resource, Role, VolumeMount, macros

NASTY = ["; rm -rf ~", "$HOME", "`id`", "a'b\"c", "new\nline", "tab\there", "=x", "-n"]


def _role(image: str = "/tmp", name: str = "trainer", **kw: object) -> Role:
    args: dict[str, object] = dict(
        entrypoint="python",
        args=["-c", "print(1)"],
        num_replicas=1,
        resource=Resource(cpu=2, gpu=0, memMB=1024),
    )
    args.update(kw)
    return Role(name, image=image, **args)  # type: ignore[arg-type]


def _build(app: AppDef, **kw: object) -> LsfRequest:
    opts: dict[str, object] = dict(app_id="app-x1", jobdir="/jobs")
    opts.update(kw)
    return build_request(app, **opts)  # type: ignore[arg-type]


def test_one_job_per_replica_rank0_first_the_others_wait_for_it() -> None:
    app = AppDef("app", [_role(num_replicas=2), _role(name="ps")])
    req = _build(app, queue="normal")
    assert [r.job_name for r in req.replicas] == [
        "app-x1-trainer-0",
        "app-x1-trainer-1",
        "app-x1-ps-0",
    ]
    d = "/jobs/.torchx-lsf/app-x1"
    assert req.app_dir == d
    assert req.replicas[0].bsub == [
        "bsub", "-P", "app-x1", "-J", "app-x1-trainer-0", "-cwd", "/tmp", "-outdir", d,
        "-oo", f"{d}/trainer-0.lsf.out", "-eo", f"{d}/trainer-0.lsf.err", "-q", "normal",
        "-n", "2", "-R", "span[hosts=1] rusage[mem=1024]",
    ]  # fmt: skip
    for r in req.replicas[1:]:
        assert r.bsub[-2:] == ["-w", "started(app-x1-trainer-0)"]
    assert req.replicas[2].job_file == (
        "#!/bin/sh\n# torchx-lsf job file v1\nexec /bin/bash /jobs/.torchx-lsf/app-x1/ps-0.sh\n"
    )


def test_resources_gpus_and_no_memory() -> None:
    req = _build(AppDef("a", [_role(resource=Resource(cpu=0, gpu=2, memMB=0))]))
    bsub = req.replicas[0].bsub
    assert "-n" not in bsub
    assert bsub[bsub.index("-R") + 1] == "span[hosts=1]"
    assert bsub[bsub.index("-gpu") + 1] == "num=2:mode=shared:j_exclusive=yes"


def test_a_fraction_of_a_cpu_takes_a_whole_slot() -> None:
    for cpu, slots in ((0.5, "1"), (2.5, "3"), (4, "4")):
        role = _role(resource=Resource(cpu=cpu, gpu=0, memMB=0))  # type: ignore[arg-type]
        bsub = _build(AppDef("a", [role])).replicas[0].bsub
        assert bsub[bsub.index("-n") + 1] == slots


def test_no_queue_no_q() -> None:
    assert "-q" not in _build(AppDef("a", [_role()])).replicas[0].bsub


def test_env_goes_to_the_env_file_never_a_command_line() -> None:
    secret = "s3cr3t-value"
    role = _role(env={"TOKEN": secret, "WHO": macros.app_id}, image="repo/img:1")
    req = _build(AppDef("a", [role]))
    r = req.replicas[0]
    assert r.env["TOKEN"] == secret and r.env["WHO"] == "app-x1"
    assert secret not in " ".join(r.bsub) and secret not in r.job_file and secret not in r.script
    assert f"TOKEN={secret}\n" in env_file(r.env)
    # docker is given the names only: its values come from the script's environment
    assert "--env TOKEN" in r.script and "--env TORCHX_RANK0_HOST" in r.script


def test_docker_command_with_upstream_run_options() -> None:
    role = _role(
        image="ghcr.io/x/trainer:1",
        mounts=[
            BindMount(src_path="/data", dst_path="/d", read_only=True),
            VolumeMount(src="vol", dst_path="/v"),
            DeviceMount(src_path="/dev/fuse", dst_path="/dev/fuse"),
        ],
        port_map={"c10d": 29500},
        resource=Resource(cpu=2, gpu=1, memMB=512),
    )
    req = _build(AppDef("a", [role]), container_workdir="/work", host_network=False, shm_size="1g")
    r = req.replicas[0]
    assert r.image == "ghcr.io/x/trainer:1" and r.cwd == req.app_dir
    run = next(line for line in r.script.splitlines() if line.startswith("docker run"))
    for part in (
        "--rm --name=app-x1-trainer-0",
        "--mount type=bind,source=/data,target=/d,readonly",
        "--mount type=volume,source=vol,target=/v",
        "--device=/dev/fuse:/dev/fuse:rwm",
        "--workdir /work",
        "--publish 29500",
        "--shm-size=1g",
        "--cpus=2",
        "--memory=512m",
        "--gpus all",
        "--entrypoint python ghcr.io/x/trainer:1 -c 'print(1)' &",
    ):
        assert part in run, part
    # a kill of the job stops the container through the engine, outside the job's processes
    assert (
        "trap 'setsid docker stop --time 10 app-x1-trainer-0 >/dev/null 2>&1 < /dev/null &' INT TERM"
        in r.script
    )
    host = _build(AppDef("a", [role]), host_network=True).replicas[0].script
    assert "--net=host --ipc=host" in host and "--publish" not in host


def test_a_mount_docker_cannot_take_is_refused() -> None:
    role = _role(image="img", mounts=[BindMount(src_path="/a,b", dst_path="/d")])
    with pytest.raises(InvalidAppException, match="mount source '/a,b'"):
        _build(AppDef("a", [role]))


def test_a_directory_image_runs_directly_there(tmp_path: Path) -> None:
    role = _role(image=str(tmp_path), args=["-c", macros.img_root])
    r = _build(AppDef("a", [role])).replicas[0]
    assert r.image == "" and r.cwd == str(tmp_path)
    assert f"cd {tmp_path} || exit 1" in r.script
    assert f"python -c {tmp_path}" in r.script and "docker" not in r.script


@pytest.mark.parametrize(
    ("role", "said"),
    [
        (_role(name="bad name"), "role name 'bad name'"),
        (_role(num_replicas=0), "num_replicas=0"),
        (_role(entrypoint=""), "has no entrypoint"),
        (_role(env={"1X": "v"}), "env name '1X'"),
        (_role(env={RANK0_ENV: "h"}), "set by the replica script"),
        (_role(args=["a\x00b"]), "NUL character"),
    ],
)
def test_apps_lsf_cannot_run_are_refused_in_one_line(role: Role, said: str) -> None:
    with pytest.raises(InvalidAppException, match=re.escape(said)) as info:
        _build(AppDef("a", [role]))
    assert "\n" not in str(info.value)


def test_two_roles_of_one_name_and_no_roles() -> None:
    with pytest.raises(InvalidAppException, match="two roles named"):
        _build(AppDef("a", [_role(), _role()]))
    with pytest.raises(InvalidAppException, match="no roles"):
        _build(AppDef("a", []))


def test_dryrun_text_shows_each_command_and_file() -> None:
    text = str(_build(AppDef("a", [_role(num_replicas=2)])))
    assert text.count("bsub -P app-x1 -J") == 2
    assert "<<'EOF'" in text and "trainer-1.env (0600)" in text and "trainer-0.sh (0600)" in text


@pytest.mark.parametrize("text", [*NASTY, "", "ü", "\r\n", "\\x41"])
def test_shell_quote_gives_back_the_text(text: str) -> None:
    out = subprocess.run(
        ["bash", "-c", f"printf %s {shell_quote(text)}"], capture_output=True, check=True
    ).stdout.decode()
    assert out == text


# -- the scripts, run ---------------------------------------------------------------------


def _materialize(req: LsfRequest) -> None:
    """Writes the app's directory as ``schedule`` does (private dir, 0600 files)."""
    os.makedirs(req.app_dir, mode=0o700)
    os.chmod(req.app_dir, 0o700)
    for r in req.replicas:
        for name, text in (
            (f"{r.file_stem}.env", env_file(r.env)),
            (f"{r.file_stem}.sh", r.script),
        ):
            path = os.path.join(req.app_dir, name)
            with open(path, "w") as f:
                f.write(text)
            os.chmod(path, 0o600)


def _run_job(req: LsfRequest, k: int, env: dict[str, str] | None = None) -> int:
    r = req.replicas[k]
    proc = subprocess.run(
        ["sh", "-c", r.job_file],
        cwd=r.cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
    )
    return proc.returncode


def test_the_script_runs_the_program_verbatim_with_its_env(
    tmp_path: Path, fake_lsf: FakeTools
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    role = Role(
        "main",
        image=str(work),
        entrypoint="python3",
        args=[
            "-c",
            "import os, sys; print(sys.argv[1:]); print(os.getcwd()); print(os.environ['SECRET'], os.environ['TORCHX_RANK0_HOST'])",
            *NASTY,
        ],
        env={"SECRET": "a b'c\nd"},
        num_replicas=2,
    )
    req = _build(AppDef("a", [role]), jobdir=str(tmp_path / "jobs"))
    os.makedirs(tmp_path / "jobs" / ".torchx-lsf", mode=0o700)
    _materialize(req)
    assert _run_job(req, 0, {"LSB_HOSTS": "hostA hostA"}) == 0
    out = Path(req.app_dir, "main-0.out").read_text().splitlines()
    assert out[0] == repr(NASTY)
    assert out[1] == str(work)
    assert out[2] == "a b'c"  # the value holds a newline: printed over two lines
    assert out[3] == "d hostA"
    # replica 1 asks bjobs where rank 0 runs
    fake_lsf.answer("bjobs", stdout="4*hostB:2*hostC\n")
    assert _run_job(req, 1) == 0
    assert Path(req.app_dir, "main-1.out").read_text().splitlines()[3] == "d hostB"
    assert fake_lsf.calls("bjobs") == [
        ["-noheader", "-a", "-o", "exec_host", "-J", "app-x1-main-0"]
    ]
    assert fake_lsf.calls("bkill") == []


def test_a_failing_replica_ends_the_others(tmp_path: Path, fake_lsf: FakeTools) -> None:
    role = Role(
        "main",
        image=str(tmp_path),
        entrypoint="sh",
        args=["-c", "echo oops >&2; exit 3"],
        num_replicas=3,
    )
    req = _build(AppDef("a", [role]), jobdir=str(tmp_path / "jobs"))
    os.makedirs(tmp_path / "jobs" / ".torchx-lsf", mode=0o700)
    _materialize(req)
    assert _run_job(req, 0) == 3
    assert Path(req.app_dir, "main-0.err").read_text() == "oops\n"
    assert Path(req.app_dir, "main-0.exit").read_text() == "3\n"
    assert fake_lsf.calls("bkill") == [["-J", "app-x1-main-1"], ["-J", "app-x1-main-2"]]


def test_the_script_refuses_a_directory_others_can_read(
    tmp_path: Path, fake_lsf: FakeTools
) -> None:
    role = Role("main", image=str(tmp_path), entrypoint="true")
    req = _build(AppDef("a", [role]), jobdir=str(tmp_path / "jobs"))
    os.makedirs(tmp_path / "jobs" / ".torchx-lsf", mode=0o700)
    _materialize(req)
    os.chmod(req.app_dir, 0o755)
    r = req.replicas[0]
    proc = subprocess.run(["sh", "-c", r.job_file], capture_output=True, text=True)
    assert proc.returncode == 1
    assert "is not a private directory" in proc.stderr
    assert not Path(req.app_dir, "main-0.out").exists()


def _retrying(tmp_path: Path, program: str, n: int = 3, retries: int = 1) -> LsfRequest:
    role = Role(
        "main",
        image=str(tmp_path),
        entrypoint="sh",
        args=["-c", program],
        num_replicas=n,
        max_retries=retries,
    )
    req = _build(AppDef("a", [role]), jobdir=str(tmp_path / "jobs"))
    os.makedirs(tmp_path / "jobs" / ".torchx-lsf", mode=0o700)
    _materialize(req)
    return req


def test_retries_are_requeues_on_an_exit_value(tmp_path: Path) -> None:
    req = _retrying(tmp_path, "true", retries=2)
    for r in req.replicas:
        assert r.bsub[-2:] == ["-Q", "75"], r.bsub
        assert "brequeue -a -J" in r.script and "of 2)" in r.script
    plain = _build(AppDef("a", [_role(num_replicas=2)]))
    for r in plain.replicas:
        assert "-Q" not in r.bsub and "brequeue" not in r.script and "restarts" not in r.script


def test_a_failure_with_retries_left_reruns_the_whole_app(
    tmp_path: Path, fake_lsf: FakeTools
) -> None:
    req = _retrying(tmp_path, "echo oops >&2; exit 3")
    # first attempt: the failed replica counts the restart, requeues the others, and
    # exits with the value LSF requeues it on; it records no exit and ends no one
    assert _run_job(req, 0) == 75
    assert Path(req.app_dir, "restarts").read_text() == "1\n"
    assert not Path(req.app_dir, "main-0.exit").exists()
    assert fake_lsf.calls("brequeue") == [
        ["-a", "-J", "app-x1-main-1"],
        ["-a", "-J", "app-x1-main-2"],
    ]
    assert fake_lsf.calls("bkill") == []
    assert "rerunning the app (retry 1 of 1)" in Path(req.app_dir, "main-0.err").read_text()
    # the last attempt fails the app as without retries
    fake_lsf.answer("bjobs", stdout="hostA\n")  # where rank 0 runs
    assert _run_job(req, 1) == 3
    assert Path(req.app_dir, "main-1.exit").read_text() == "3\n"
    assert fake_lsf.calls("bkill") == [["-J", "app-x1-main-0"], ["-J", "app-x1-main-2"]]
    assert Path(req.app_dir, "restarts").read_text() == "1\n"


def test_only_the_first_failure_of_an_attempt_reruns_the_app(
    tmp_path: Path, fake_lsf: FakeTools
) -> None:
    req = _retrying(tmp_path, "exit 4")
    os.mkdir(Path(req.app_dir, "retry-0"), 0o700)  # another replica of attempt 0 did
    fake_lsf.answer("bjobs", stdout="hostA\n")  # where rank 0 runs
    assert _run_job(req, 2) == 75
    assert fake_lsf.calls("brequeue") == [] and fake_lsf.calls("bkill") == []
    assert not Path(req.app_dir, "restarts").exists()


def test_a_rerun_forgets_the_exit_of_an_earlier_attempt(
    tmp_path: Path, fake_lsf: FakeTools
) -> None:
    req = _retrying(tmp_path, "exit 0")
    Path(req.app_dir, "main-0.exit").write_text("3\n")
    Path(req.app_dir, "restarts").write_text("1\n")
    assert _run_job(req, 0) == 0
    assert not Path(req.app_dir, "main-0.exit").exists()


def test_the_last_attempt_never_exits_with_the_requeue_value(
    tmp_path: Path, fake_lsf: FakeTools
) -> None:
    req = _retrying(tmp_path, "exit 75", n=1)
    Path(req.app_dir, "restarts").write_text("1\n")
    assert _run_job(req, 0) == 1  # LSF would requeue the job once more on 75
    assert Path(req.app_dir, "main-0.exit").read_text() == "75\n"


def test_a_cancelled_app_is_not_rerun(tmp_path: Path, fake_lsf: FakeTools) -> None:
    req = _retrying(tmp_path, "exit 3", n=2)
    Path(req.app_dir, "cancelled").write_text("")
    assert _run_job(req, 0) == 3
    assert fake_lsf.calls("brequeue") == []
    assert not Path(req.app_dir, "restarts").exists()

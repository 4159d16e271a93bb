"""The built-in components: dist.ddp, dist.spmd and utils.*, field by field."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from torchx.components.args import materialize_appdef
from torchx.components.dist import TORCH_DEBUG_FLAGS, ddp, parse_nnodes, spmd
from torchx.components.errors import ComponentArgError
from torchx.components.finder import list_components
from torchx.components.structured_arg import StructuredJArgument, StructuredNameArgument
from torchx.components.utils import binary, booth, copy, echo, python, sh, touch
from torchx.specs import AppDef, BindMount, Resource, Role, macros
from torchx.specs.errors import UnknownNamedResourceException
from torchx.specs.file_linter import validate

MULTI_NODE_ENDPOINT = "$${${rank0_env}:=localhost}:$${TORCHX_RDZV_PORT:-29500}"


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run from a directory holding main.py, with no LOGLEVEL from the outside."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "main.py").write_text("print('hi')\n")
    monkeypatch.delenv("LOGLEVEL", raising=False)


def _torchrun(*middle: str, tail: str = "main.py") -> str:
    return " ".join(["torchrun", *middle, tail])


def _argv_after_bash(
    role: Role, rank0_host: str | None = None, env_extra: dict[str, str] | None = None
) -> list[str]:
    """What torchrun would receive: the role's command run by bash with torchrun replaced."""
    values = macros.Values(
        img_root="/img", app_id="app-1", replica_id="3", rank0_env="TORCHX_RANK0_HOST"
    )
    command = values.apply(role).args[1]
    assert command.startswith("torchrun ")
    script = "printf '%s\\n' " + command[len("torchrun ") :]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    if rank0_host is not None:
        env["TORCHX_RANK0_HOST"] = rank0_host
    env.update(env_extra or {})
    out = subprocess.run(
        ["bash", "-c", script], env=env, capture_output=True, text=True, check=True
    ).stdout
    return out.split("\n")[:-1]


# --------------------------------------------------------------------- dist.ddp


def test_ddp_single_node_field_by_field() -> None:
    app = ddp(script="main.py", j="4")
    assert app == AppDef(
        name="main",
        roles=[
            Role(
                name="main",
                image=".",
                min_replicas=1,
                entrypoint="bash",
                args=[
                    "-c",
                    _torchrun(
                        "--rdzv_backend c10d --rdzv_endpoint localhost:0 --rdzv_id '${app_id}'",
                        "--nnodes 1 --nproc_per_node 4 --tee 3 --role ''",
                    ),
                ],
                env={
                    "TORCHX_TRACKING_EXPERIMENT_NAME": "default-experiment",
                    "TORCHX_TRACKING_RUN_NAME": "main",
                    "LOGLEVEL": "WARNING",
                },
                num_replicas=1,
                max_retries=0,
                resource=Resource(cpu=2, gpu=0, memMB=1024),
                port_map={"c10d": 29500},
            )
        ],
    )


def test_ddp_default_j_is_1x2() -> None:
    assert "--nnodes 1 --nproc_per_node 2 " in ddp(script="main.py").roles[0].args[1]


def test_ddp_multi_node_uses_the_rank0_host() -> None:
    role = ddp(script="main.py", j="2x4").roles[0]
    assert (role.num_replicas, role.min_replicas) == (2, 2)
    assert role.args[1] == _torchrun(
        f"--rdzv_backend c10d --rdzv_endpoint {MULTI_NODE_ENDPOINT} --rdzv_id '${{app_id}}'",
        "--nnodes 2 --nproc_per_node 4 --tee 3 --role ''",
    )


def test_ddp_elastic() -> None:
    role = ddp(script="main.py", j="1:4x2").roles[0]
    assert (role.num_replicas, role.min_replicas) == (4, 1)
    assert f"--rdzv_endpoint {MULTI_NODE_ENDPOINT} " in role.args[1]
    assert " --nnodes 1:4 --nproc_per_node 2 " in role.args[1]


def test_ddp_elastic_with_one_max_node_stays_local() -> None:
    role = ddp(script="main.py", j="0:1x2").roles[0]
    assert (role.num_replicas, role.min_replicas) == (1, 0)
    assert "--rdzv_endpoint localhost:0 --rdzv_id" in role.args[1]
    assert " --nnodes 0:1 " in role.args[1]


def test_ddp_command_as_bash_runs_it() -> None:
    role = ddp("--lr", "0.1", "it's", "a b", script="main.py", j="1:2x3", rdzv_port=1234).roles[0]
    expected_head = [
        "--rdzv_backend",
        "c10d",
        "--rdzv_endpoint",
    ]
    expected_tail = [
        "--rdzv_id",
        "app-1",
        "--nnodes",
        "1:2",
        "--nproc_per_node",
        "3",
        "--tee",
        "3",
        "--role",
        "",
        "main.py",
        "--lr",
        "0.1",
        "it's",
        "a b",
    ]
    on_rank0 = _argv_after_bash(role)  # variable unset (rank 0 on some schedulers)
    assert on_rank0 == [*expected_head, "localhost:1234", *expected_tail]
    elsewhere = _argv_after_bash(role, rank0_host="node-0.cluster")
    assert elsewhere == [*expected_head, "node-0.cluster:1234", *expected_tail]


def test_ddp_default_port_is_the_jobs_own_where_the_scheduler_gives_one() -> None:
    # two jobs whose rank 0 share a host must not share a rendezvous store
    role = ddp(script="main.py", j="2x1").roles[0]
    endpoint = _argv_after_bash(role, rank0_host="n1").index("--rdzv_endpoint") + 1
    assert _argv_after_bash(role, rank0_host="n1")[endpoint] == "n1:29500"
    given = _argv_after_bash(role, rank0_host="n1", env_extra={"TORCHX_RDZV_PORT": "41234"})
    assert given[endpoint] == "n1:41234"
    # a port given explicitly is used as given, whatever the scheduler offers
    fixed = ddp(script="main.py", j="2x1", rdzv_port=4000).roles[0]
    argv = _argv_after_bash(fixed, rank0_host="n1", env_extra={"TORCHX_RDZV_PORT": "41234"})
    assert argv[endpoint] == "n1:4000"


def test_ddp_module() -> None:
    app = ddp("--x", "1", m="pkg.sub.train", j="2")
    role = app.roles[0]
    assert app.name == role.name == "train"
    assert role.args[1].endswith("--role '' -m pkg.sub.train --x 1")


def test_ddp_name_forms() -> None:
    app = ddp(script="main.py", name="exp/run1")
    assert app.name == "run1"
    assert app.roles[0].name == "main"
    assert app.roles[0].env["TORCHX_TRACKING_EXPERIMENT_NAME"] == "exp"
    assert app.roles[0].env["TORCHX_TRACKING_RUN_NAME"] == "run1"
    assert ddp(script="main.py", name="exp/").name == "main"
    assert ddp(script="main.py", name="solo").name == "solo"


def test_ddp_env_debug_and_loglevel(monkeypatch: pytest.MonkeyPatch) -> None:
    given_env = {"A": "1", "LOGLEVEL": "DEBUG"}
    role = ddp(script="main.py", env=given_env, debug=True).roles[0]
    assert given_env == {"A": "1", "LOGLEVEL": "DEBUG"}  # not modified
    assert role.env == {
        "A": "1",
        "LOGLEVEL": "DEBUG",
        "TORCHX_TRACKING_EXPERIMENT_NAME": "default-experiment",
        "TORCHX_TRACKING_RUN_NAME": "main",
        **TORCH_DEBUG_FLAGS,
    }
    monkeypatch.setenv("LOGLEVEL", "INFO")
    assert ddp(script="main.py").roles[0].env["LOGLEVEL"] == "INFO"


def test_ddp_named_resource() -> None:
    res = ddp(script="main.py", h="gpu.small", cpu=99).roles[0].resource
    assert (res.cpu, res.gpu, res.memMB) == (8, 1, 32 * 1024)
    assert res.get_resource_name() == "gpu.small"


def test_ddp_unknown_named_resource() -> None:
    with pytest.raises(UnknownNamedResourceException) as info:
        ddp(script="main.py", h="gpu.smal")
    assert str(info.value) == "unknown named resource 'gpu.smal' (did you mean 'gpu.small'?)"


def test_ddp_options() -> None:
    app = ddp(
        script="main.py",
        j="2x1",
        rdzv_backend="static",
        rdzv_conf="join_timeout=600",
        rdzv_port=4000,
        tee=1,
        max_retries=3,
        metadata={"k": "v"},
        mounts=["type=bind,src=/data,dst=/mnt/data,readonly"],
        image="registry.example/img:1",
    )
    role = app.roles[0]
    assert role.args[1] == _torchrun(
        "--rdzv_backend static --rdzv_conf join_timeout=600",
        "--rdzv_endpoint $${${rank0_env}:=localhost}:4000 --rdzv_id '${app_id}'",
        "--nnodes 2 --nproc_per_node 1 --tee 1 --role '' --node_rank '${replica_id}'",
    )
    assert role.port_map == {"c10d": 4000}
    assert role.max_retries == 3
    assert role.image == "registry.example/img:1"
    assert app.metadata == {"k": "v"}
    assert role.mounts == [BindMount(src_path="/data", dst_path="/mnt/data", read_only=True)]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "exactly one of --script and -m must be given"),
        (
            {"script": "main.py", "m": "a.b"},
            "exactly one of --script and -m must be given (got --script 'main.py' and -m 'a.b')",
        ),
        ({"script": "main.py", "j": "2x"}, "invalid -j '2x': expected NPROC"),
        (
            {"script": "main.py", "j": "3:2x1"},
            "invalid -j '3:2x1': the minimum number of nodes (3) exceeds the maximum (2)",
        ),
        ({"script": "main.py", "tee": 7}, "invalid --tee 7"),
        ({"script": "main.py", "rdzv_port": 0}, "invalid --rdzv_port 0"),
    ],
)
def test_ddp_bad_input(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ComponentArgError) as info:
        ddp(**kwargs)  # type: ignore[arg-type]
    assert str(info.value).startswith(message)


def test_ddp_script_must_exist_in_a_directory_image(tmp_path: Path) -> None:
    with pytest.raises(ComponentArgError) as info:
        ddp(script="train.py")
    assert str(info.value) == (
        f"--script 'train.py' does not exist in the launch directory ({tmp_path / 'train.py'}); "
        "give the path of a Python file relative to it, or -m for a module"
    )
    with pytest.raises(ComponentArgError, match=r"'sub' is a directory in the launch directory"):
        (tmp_path / "sub").mkdir()
        ddp(script="sub")
    image = tmp_path / "img"
    (image / "app").mkdir(parents=True)
    (image / "app" / "t.py").write_text("")
    assert ddp(script="app/t.py", image=str(image)).roles[0].name == "t"
    with pytest.raises(ComponentArgError, match=r"in the image directory '.*img'"):
        ddp(script="main.py", image=str(image))
    # container images and run-time paths cannot be checked here
    assert ddp(script="train.py", image="ghcr.io/pytorch/torchx:0.7.0").roles[0].name == "train"
    assert ddp(script="${img_root}/train.py").roles[0].name == "train"
    assert ddp(script=str(tmp_path / "main.py")).name == "main"


def test_ddp_from_the_command_line() -> None:
    app = materialize_appdef(
        ddp,
        [
            "-j",
            "1:4x2",
            "--script",
            "main.py",
            "-h",
            "gpu.small",
            "--env",
            "A=1",
            "--",
            "--lr",
            "1",
        ],
        prog="dist.ddp",
    )
    role = app.roles[0]
    assert (role.num_replicas, role.min_replicas, role.resource.gpu) == (4, 1, 1)
    assert role.env["A"] == "1"
    assert role.args[1].endswith("--role '' main.py --lr 1")
    with pytest.raises(ComponentArgError) as info:
        materialize_appdef(ddp, ["-j", "x", "--script", "main.py"], prog="dist.ddp")
    assert str(info.value).startswith("dist.ddp: invalid -j 'x'")
    assert info.value.usage.startswith("usage: dist.ddp [--help]")


# ---------------------------------------------------------------- parse_nnodes


@given(st.integers(1, 10**6))
def test_parse_nnodes_nproc_only(nproc: int) -> None:
    assert parse_nnodes(str(nproc)) == (1, 1, nproc, "1")


@given(st.integers(1, 10**6), st.integers(1, 10**6))
def test_parse_nnodes_fixed(nnodes: int, nproc: int) -> None:
    assert parse_nnodes(f"{nnodes}x{nproc}") == (nnodes, nnodes, nproc, str(nnodes))


@given(st.integers(0, 10**6), st.integers(1, 10**6), st.integers(1, 10**6))
def test_parse_nnodes_elastic(a: int, b: int, nproc: int) -> None:
    lo, hi = min(a, b), max(a, b)
    rep = f"{lo}:{hi}"
    assert parse_nnodes(f"{rep}x{nproc}") == (lo, hi, nproc, rep)
    # and back: the parts form the same -j again
    assert parse_nnodes(f"{parse_nnodes(f'{rep}x{nproc}')[3]}x{nproc}")[:3] == (lo, hi, nproc)


@given(st.text(max_size=12))
def test_parse_nnodes_rejects_only_with_its_error(text: str) -> None:
    try:
        lo, hi, nproc, rep = parse_nnodes(text)
    except ComponentArgError as e:
        assert repr(text) in str(e)
        return
    assert 0 <= lo <= hi and hi >= 1 and nproc >= 1
    normal = f"{rep}x{nproc}" if "x" in text else str(nproc)
    assert parse_nnodes(normal) == (lo, hi, nproc, rep)


@given(st.from_regex(r"[0-9:x]{1,8}", fullmatch=True))
def test_parse_nnodes_near_misses(text: str) -> None:
    try:
        lo, hi, nproc, rep = parse_nnodes(text)
    except ComponentArgError as e:
        assert str(e).startswith(f"invalid -j {text!r}: ")
        return
    assert text.count("x") <= 1 and text.count(":") <= 1
    assert (lo, hi, nproc) == (int(rep.split(":")[0]), int(rep.split(":")[-1]), nproc)


@pytest.mark.parametrize(
    "bad", ["", "x4", "2x", "1:x4", ":2x4", "2x4x1", "0", "0x4", "2x0", " 4", "4\n", "٤", "1.5"]
)
def test_parse_nnodes_bad_values(bad: str) -> None:
    with pytest.raises(ComponentArgError, match=r"invalid -j"):
        parse_nnodes(bad)


# ---------------------------------------------------------------------- dist.spmd


def test_spmd_defaults() -> None:
    role = spmd(script="main.py").roles[0]
    assert (role.num_replicas, role.resource.get_resource_name()) == (1, "gpu.small")
    assert " --nnodes 1 --nproc_per_node 1 " in role.args[1]


def test_spmd_infers_processes_from_gpus() -> None:
    role = spmd("--a", m="pkg.main", j="2", h="gpu.medium").roles[0]
    assert role.num_replicas == 2
    assert " --nnodes 2 --nproc_per_node 2 " in role.args[1]
    assert role.args[1].endswith("-m pkg.main --a")


def test_spmd_elastic_and_mismatch_warning() -> None:
    with pytest.warns(UserWarning, match=r"runs 4 processes per node but gpu.small has 1 GPU;"):
        role = spmd(script="main.py", j="1:3x4").roles[0]
    assert (role.num_replicas, role.min_replicas) == (3, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        spmd(script="main.py", j="2x1")


def test_spmd_cpu_host_needs_nproc() -> None:
    with pytest.raises(ComponentArgError, match=r"'cpu.small' has no GPUs.*-j 2xNPROC"):
        spmd(script="main.py", j="2", h="cpu.small")
    with pytest.raises(ComponentArgError, match=r"invalid -j 'two'"):
        spmd(script="main.py", j="two")


def test_structured_args() -> None:
    assert str(StructuredJArgument.parse_from("gpu.large", "1")) == "1x4"
    assert str(StructuredJArgument(nnodes=4, nproc_per_node=8, min_nnodes=2)) == "2:4x8"
    assert StructuredNameArgument.parse_from("/", m="a.b") == StructuredNameArgument(
        "default-experiment", "b"
    )
    assert StructuredNameArgument.parse_from("/r", script="d/x.tar.py").run_name == "r"
    assert StructuredNameArgument.parse_from("/", script="d/.hidden").run_name == ".hidden"
    assert str(StructuredNameArgument("e", "r")) == "e/r"


# -------------------------------------------------------------------------- utils


def test_echo_and_touch() -> None:
    assert echo() == AppDef(
        name="echo",
        roles=[
            Role(
                name="echo",
                image=".",
                entrypoint="echo",
                args=["hello world"],
                resource=Resource(cpu=1, gpu=0, memMB=1024),
            )
        ],
    )
    assert echo(msg="hi", image="img", num_replicas=3).roles[0].num_replicas == 3
    assert touch("f.txt") == AppDef(
        name="touch",
        roles=[
            Role(
                name="touch",
                image=".",
                entrypoint="touch",
                args=["f.txt"],
                resource=Resource(cpu=1, gpu=0, memMB=1024),
            )
        ],
    )


def test_sh_quotes_each_argument() -> None:
    app = sh("echo", "$HOME", "a b", h="cpu.nano", env={"X": "1"}, max_retries=2, num_replicas=2)
    role = app.roles[0]
    assert app.name == role.name == "sh"
    assert (role.entrypoint, role.args) == ("sh", ["-c", "echo '$HOME' 'a b'"])
    assert role.env == {"X": "1", "LOGLEVEL": "WARNING"}
    assert (role.num_replicas, role.max_retries, role.resource.memMB) == (2, 2, 512)
    out = subprocess.run(["sh", *role.args], capture_output=True, text=True, check=True).stdout
    assert out == "$HOME a b\n"
    with pytest.raises(ComponentArgError, match="a command to run is needed"):
        sh()


def test_python_forms() -> None:
    role = python("a", script="main.py").roles[0]
    assert (role.name, role.entrypoint, role.args, role.env) == (
        "python",
        "python",
        ["main.py", "a"],
        {},
    )
    assert role.resource == Resource(cpu=1, gpu=0, memMB=1024)
    role = python("a", m="pkg.mod", num_replicas=2, gpu=1).roles[0]
    assert (role.args, role.env) == (["-m", "pkg.mod", "a"], {"HYDRA_MAIN_MODULE": "pkg.mod"})
    assert (role.num_replicas, role.resource.gpu) == (2, 1)
    app = python(c="print(1)", name="job", mounts=["type=volume,src=v,dst=/v"])
    assert (app.name, app.roles[0].args) == ("job", ["-c", "print(1)"])
    assert len(app.roles[0].mounts) == 1
    assert python(c="print(1)").name == "torchx_utils_python"


@pytest.mark.parametrize(
    ("kwargs", "detail"),
    [
        ({}, "got none"),
        ({"m": "a", "c": "b"}, "got -m and -c"),
        ({"script": "x.py", "c": "1"}, "got -c and --script"),
    ],
)
def test_python_needs_exactly_one_program(kwargs: dict[str, str], detail: str) -> None:
    with pytest.raises(ComponentArgError) as info:
        python(**kwargs)  # type: ignore[arg-type]
    assert str(info.value) == f"exactly one of -m, -c and --script must be given ({detail})"


def test_python_script_must_exist() -> None:
    with pytest.raises(ComponentArgError, match=r"--script 'nope.py' does not exist"):
        python(script="nope.py")


def test_binary() -> None:
    app = binary("-u", entrypoint="/bin/date", num_replicas=2, h="cpu.small")
    role = app.roles[0]
    assert app.name == "torchx_utils_binary"
    assert (role.name, role.image, role.entrypoint, role.args) == (
        "binary",
        ".",
        "/bin/date",
        ["-u"],
    )
    assert (role.num_replicas, role.resource.memMB) == (2, 2048)
    with pytest.raises(ComponentArgError, match="--entrypoint"):
        binary(entrypoint="")


def test_copy_runs_with_the_standard_library(tmp_path: Path) -> None:
    src = tmp_path / "src.bin"
    src.write_bytes(b"\x00data\xff")
    app = copy(str(src), str(tmp_path / "dst.bin"))
    role = app.roles[0]
    assert (app.name, role.name, role.entrypoint) == ("torchx-utils-copy",) * 2 + ("python",)
    assert role.args[0] == "-c" and role.args[2:] == [str(src), str(tmp_path / "dst.bin")]
    assert "$" not in role.args[1]  # macro substitution must leave the program alone
    subprocess.run([sys.executable, *role.args], check=True, capture_output=True)
    assert (tmp_path / "dst.bin").read_bytes() == b"\x00data\xff"


def test_copy_url_without_fsspec_says_so(tmp_path: Path) -> None:
    role = copy("s3://bucket/key", str(tmp_path / "x")).roles[0]
    done = subprocess.run(
        [sys.executable, "-S", *role.args], capture_output=True, text=True, check=False
    )
    assert done.returncode == 1
    assert "utils.copy: copying URLs needs fsspec" in done.stderr


def test_booth_evaluates_and_records(tmp_path: Path) -> None:
    app = booth(1.0, 3.0, trial_idx=5, tracker_base=str(tmp_path / "t"))
    role = app.roles[0]
    assert (app.name, role.name, role.entrypoint) == ("torchx-utils-booth",) * 2 + ("python",)
    assert "$" not in role.args[1]
    out = subprocess.run([sys.executable, *role.args], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "booth(1.0, 3.0) = 0.0"
    assert json.loads((tmp_path / "t" / "5").read_text()) == {"booth_eval": 0.0}
    cli = materialize_appdef(booth, ["--x1", "0", "--x2", "0.5"], prog="utils.booth")
    assert cli.roles[0].args[2:] == ["0.0", "0.5", "0", "/tmp/torchx-util-booth"]


# ---------------------------------------------------------------------- the linter


def test_every_builtin_passes_the_linter() -> None:
    builtins = {n: c for n, c in list_components().items() if c.source.startswith("torchx-runner")}
    assert set(builtins) == {
        "dist.ddp",
        "dist.spmd",
        "metrics.tensorboard",
        "serve.torchserve",
        "utils.binary",
        "utils.booth",
        "utils.copy",
        "utils.echo",
        "utils.python",
        "utils.sh",
        "utils.touch",
    }
    for name, cdef in builtins.items():
        assert cdef.path is not None
        assert validate(cdef.path, cdef.fn_name) == [], name
        assert cdef.validate() == []


def test_every_builtin_materializes_with_its_help() -> None:
    from torchx.components.errors import ComponentHelpRequested

    for name, cdef in list_components().items():
        if not cdef.source.startswith("torchx-runner"):
            continue
        with pytest.raises(ComponentHelpRequested) as info:
            materialize_appdef(cdef.fn, ["--help"], prog=name)
        assert info.value.help.startswith(f"usage: {name} ")
        assert cdef.description.split(" (")[0].split(",")[0] in info.value.help


def test_importing_the_builtins_stays_light() -> None:
    code = (
        "import sys, torchx.components.dist, torchx.components.utils\n"
        "heavy = ('argparse', 'pluggy', 'cattrs', 'importlib.metadata', 'difflib',"
        " 'torchx.components.args', 'torchx.components.finder')\n"
        "print([m for m in heavy if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_shlex_round_trip_of_single_node_command() -> None:
    role = ddp("x y", script="main.py").roles[0]
    assert shlex.split(role.args[1])[-2:] == ["main.py", "x y"]

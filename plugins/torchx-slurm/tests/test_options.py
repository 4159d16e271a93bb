"""Run options: upstream TorchX's names, and bad values refused in one line before sbatch."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from torchx_slurm.options import SlurmOpts

from torchx.specs.errors import InvalidRunConfigException

UPSTREAM_NAMES = {
    "partition",
    "time",
    "account",
    "qos",
    "constraint",
    "comment",
    "mail-user",
    "mail-type",
    "job_dir",
    "nomem",
}


def test_upstream_names_and_ours() -> None:
    names = {name for name, _ in SlurmOpts.as_runopts()}
    assert names == UPSTREAM_NAMES | {
        "exclusive",
        "sbatch_args",
        "shared_logs",
        "list_since",
        "allow_pending",
        "array_parallelism",
    }


def test_an_upstream_torchxconfig_section_resolves() -> None:
    # the values as an upstream user's .torchxconfig [slurm] section writes them
    opts = SlurmOpts.as_runopts()
    cfg = opts.resolve(
        opts.cfg_from_str(
            "partition=compute,time=10,comment=hello,mail-user=a@b.org,account=ml,qos=high,nomem=true"
        )
    )
    values = SlurmOpts.from_cfg(cfg).sbatch_values()
    assert values == {
        "job": [("comment", "hello"), ("mail-user", "a@b.org")],
        "group": [("partition", "compute"), ("time", "10"), ("account", "ml"), ("qos", "high")],
    }
    assert cfg["nomem"] is True


@pytest.mark.parametrize(
    "time", ["10", "10:30", "1:00:00", "2-0", "2-12:00", "2-12:00:00", "UNLIMITED", "infinite"]
)
def test_slurm_time_forms_pass(time: str) -> None:
    assert SlurmOpts.from_cfg({"time": time}).sbatch_values()["group"] == [("time", time)]


@pytest.mark.parametrize(
    ("cfg", "message"),
    [
        ({"time": "1h"}, "'time'='1h' is not a Slurm time limit"),
        ({"mail-type": "END,SOMETIMES"}, "'SOMETIMES' is not a Slurm mail type"),
        ({"partition": 'a"b'}, "'partition'='a\"b' cannot be passed to sbatch"),
        ({"comment": "a\nb"}, "cannot be passed to sbatch"),
        ({"account": "-x"}, "leading '-'"),
    ],
)
def test_bad_values_are_one_clear_line(cfg: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidRunConfigException) as info:
        SlurmOpts.from_cfg(cfg).sbatch_values()
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_mail_type_is_normalized() -> None:
    assert SlurmOpts.from_cfg({"mail-type": "end, fail"}).sbatch_values()["job"] == [
        ("mail-type", "END,FAIL")
    ]


def test_extra_sbatch_args_are_checked() -> None:
    assert SlurmOpts.from_cfg({"sbatch_args": ["--reservation=maint", "--hold"]}).sbatch_args == [
        "--reservation=maint",
        "--hold",
    ]
    for bad, message in [
        ("-p gpu", "not a long sbatch option"),
        ("--output=/x", "--output is set by the slurm scheduler itself; leave it out"),
        ("--partition=gpu", "use the run option 'partition' instead"),
        ("--begin=now'", "cannot be passed to sbatch"),
    ]:
        with pytest.raises(InvalidRunConfigException, match="sbatch_args") as info:
            SlurmOpts.from_cfg({"sbatch_args": [bad]})
        assert message in str(info.value)


@pytest.mark.parametrize(
    ("arg", "message"),
    [
        ("--chd=/elsewhere", "--chd (sbatch reads it as --chdir) is set by the slurm scheduler"),
        ("--ch=/elsewhere", "--ch (sbatch reads it as --chdir)"),
        ("--out=/x", "--out (sbatch reads it as --output)"),
        ("--part=gpu", "use the run option 'partition' instead"),
        ("--job-n=x", "(sbatch reads it as --job-name)"),
        ("--p=x", "is set by the slurm scheduler itself"),
        ("--exclus", "use the run option 'exclusive' instead"),
    ],
)
def test_an_abbreviated_reserved_option_is_refused(arg: str, message: str) -> None:
    """sbatch takes any unambiguous beginning of a long option for the option (getopt_long)."""
    with pytest.raises(InvalidRunConfigException, match="sbatch_args") as info:
        SlurmOpts.from_cfg({"sbatch_args": [arg]})
    assert message in str(info.value)


@pytest.mark.parametrize(
    "arg", ["--gpus=2", "--reservation=maint", "--mem-per-cpu=100", "--time-min=5", "--res=x"]
)
def test_options_in_full_and_other_abbreviations_pass(arg: str) -> None:
    # --gpus begins --gpus-per-node but is an option of its own in full
    assert SlurmOpts.from_cfg({"sbatch_args": [arg]}).sbatch_args == [arg]


# -- SlurmOpts: every option declared once; its checks are the fields' -----------------------


def test_run_opts_are_slurm_opts() -> None:
    from torchx_slurm.scheduler import create_scheduler

    assert create_scheduler("t").run_opts() == SlurmOpts.as_runopts()
    opt = SlurmOpts.as_runopts().get("mail-user")
    assert opt is not None and opt.aliases == [] and opt.default is None


def test_typed_values_are_read_as_given() -> None:
    opts = SlurmOpts.from_cfg(
        SlurmOpts.as_runopts().resolve({"mail-type": "end", "nomem": True, "job_dir": "~/j"})
    )
    assert opts.mail_type == "END" and opts.nomem is True and opts.sbatch_args == []
    assert opts.job_directory("/submit") == os.path.expanduser("~/j")
    assert SlurmOpts().job_directory("/submit") == "/submit"


def test_an_empty_value_is_not_set() -> None:
    opts = SlurmOpts.from_cfg({"partition": "", "time": "", "mail-type": ""})
    assert opts.sbatch_values() == {"job": [], "group": []}


_OPTION_TEXT = st.text(st.characters(codec="utf-8"), max_size=24)


@settings(max_examples=300, deadline=None)
@given(
    key=st.sampled_from(
        ["partition", "time", "account", "qos", "constraint", "comment", "mail-user", "mail-type"]
    ),
    value=_OPTION_TEXT,
)
def test_every_check_accepts_its_own_result_or_refuses_in_one_line(key: str, value: str) -> None:
    try:
        once = SlurmOpts.from_cfg({key: value})
    except InvalidRunConfigException as e:
        assert "\n" not in str(e) and repr(key) in str(e)
        return
    assert SlurmOpts.from_cfg(dict(once)) == once  # idempotent: a cfg read back is the same
    assert SlurmOpts.given({key: value}) == {key.replace("-", "_"): once[key]}


@settings(max_examples=300, deadline=None)
@given(args=st.lists(_OPTION_TEXT, max_size=3))
def test_sbatch_args_are_checked_each_or_refused_in_one_line(args: list[str]) -> None:
    try:
        opts = SlurmOpts.from_cfg({"sbatch_args": args})
    except InvalidRunConfigException as e:
        assert "\n" not in str(e) and "sbatch_args" in str(e)
        return
    assert opts.sbatch_args == args and all(a.startswith("--") for a in args)

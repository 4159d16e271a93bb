"""The checks of an AppDef that a generated shell script runs (torchx-slurm, torchx-lsf)."""

from __future__ import annotations

import pytest

from torchx.schedulers.helpers.scriptroles import BASH_READONLY, check_name, check_roles
from torchx.specs import AppDef, Role
from torchx.specs.errors import SpecError


class AcmeError(SpecError):
    """A scheduler's own error class."""


def _role(name: str = "trainer", **kw: object) -> Role:
    kw.setdefault("entrypoint", "python")
    return Role(name, image="/", **kw)  # type: ignore[arg-type]


def _check(*roles: Role, **kw: object) -> None:
    check_roles(AppDef("app", list(roles)), names="Acme jobs", error=AcmeError, **kw)  # type: ignore[arg-type]


def test_a_good_app_passes() -> None:
    _check(_role(env={"A_1": "x"}, args=["--n", "1"]), _role("ps"))


@pytest.mark.parametrize(
    ("roles", "said"),
    [
        ((), "app 'app' has no roles: give it at least one Role"),
        ((_role("bad name"),), "role name 'bad name' (app 'app') cannot name Acme jobs"),
        (
            (_role("-x"),),
            "cannot name Acme jobs: use letters, digits, '_', '.' and '-' (not first)",
        ),
        (
            (_role("r"), _role("r")),
            "app 'app' has two roles named 'r': give each role its own name",
        ),
        ((_role(num_replicas=0),), "num_replicas=0: it needs at least 1"),
        ((_role(entrypoint=""),), "has no entrypoint: set Role.entrypoint"),
        ((_role(entrypoint="<MISSING>"),), "has no entrypoint"),
        ((_role(env={"1X": "v"}),), "env name '1X' is not a valid variable name"),
        ((_role(env={"UID": "7"}),), "env name 'UID' is one bash keeps for itself"),
        ((_role(args=["a\x00b"]),), "holds a NUL character, which no program can receive"),
        ((_role(env={"K": "a\x00"}),), "NUL character"),
    ],
)
def test_each_refusal_is_one_line_of_the_schedulers_class(
    roles: tuple[Role, ...], said: str
) -> None:
    with pytest.raises(AcmeError) as info:
        _check(*roles)
    assert said in str(info.value)
    assert "\n" not in str(info.value)


def test_a_schedulers_reserved_names_add_to_bashs() -> None:
    reserved = {"MY_HOST": "is set by the replica script itself"}
    with pytest.raises(AcmeError, match="'MY_HOST' is set by the replica script itself: give"):
        _check(_role(env={"MY_HOST": "h"}), reserved=reserved)
    for key in BASH_READONLY:
        with pytest.raises(AcmeError, match="bash keeps for itself"):
            _check(_role(env={key: "v"}), reserved=reserved)


def test_the_length_limit_is_the_schedulers() -> None:
    assert check_name("role", "a" * 100, names="Acme jobs", max_len=100) == "a" * 100
    with pytest.raises(SpecError, match="at most 100"):
        check_name("role", "a" * 101, names="Acme jobs", max_len=100)

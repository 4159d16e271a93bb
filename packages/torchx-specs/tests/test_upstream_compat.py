"""Code written against upstream TorchX's documented ``torchx.specs`` API runs unchanged.

Each test uses the names the way upstream's documentation does (imports, argument
names, the exceptions caught), then checks what upstream's docs say comes out.
"""

# upstream users write typing.Dict/List/Optional: these tests do too, on purpose
# ruff: noqa: UP006, UP035, UP045

from __future__ import annotations

import argparse
import ast
import os
import textwrap
from pathlib import Path
from typing import Dict, List, Optional

import pytest
from attrs import asdict as attrs_asdict

import torchx.specs as specs
from torchx.specs import AppDef, Role
from torchx.specs.errors import ComponentArgError


def _comp(
    name: str,
    env: Optional[Dict[str, List[str]]] = None,
    tags: Optional[List[str]] = None,
    n: int = 1,
    *args: str,
) -> AppDef:
    """A component with Optional containers.

    Args:
        name: the app's name
        env: variables, each a list of values
        tags: labels
        n: replicas
        args: the program's arguments
    """
    flat = {k: ":".join(v) for k, v in (env or {}).items()}
    return AppDef(
        name=name,
        roles=[
            Role(name, image=".", entrypoint="/bin/true", args=list(args), env=flat, num_replicas=n)
        ],
        metadata={"tags": ",".join(tags or [])},
    )


def test_unknown_exceptions_are_the_error_classes_under_both_names() -> None:
    from torchx.specs import UnknownAppException, UnknownSchedulerException
    from torchx.specs.errors import UnknownAppError, UnknownSchedulerError

    assert UnknownAppException is UnknownAppError
    assert UnknownSchedulerException is UnknownSchedulerError
    with pytest.raises(UnknownSchedulerException):
        raise UnknownSchedulerError("unknown scheduler 'nope'")
    with pytest.raises(KeyError):  # upstream raised a KeyError for an unknown backend
        raise UnknownSchedulerException("unknown scheduler 'nope'")


def test_get_type_name_prints_as_upstream() -> None:
    assert specs.get_type_name(int) == "int"
    assert specs.get_type_name(str) == "str"
    assert specs.get_type_name(List[str]) == "typing.List[str]"
    assert specs.get_type_name(Dict[str, str]) == "typing.Dict[str, str]"


def test_materialize_appdef_from_torchx_specs_with_upstream_arguments() -> None:
    app = specs.materialize_appdef(
        _comp,
        ["--name", "hi", "--env", "PATH=/a,/b,MODE=fast", "--tags", "x,y", "--", "--lr", "1"],
        {"n": "3"},  # cmpnt_defaults: strings, as read from .torchxconfig
    )
    role = app.roles[0]
    assert (app.name, role.num_replicas, role.args) == ("hi", 3, ["--lr", "1"])
    assert role.env == {"PATH": "/a:/b", "MODE": "fast"}
    assert app.metadata == {"tags": "x,y"}


def test_materialize_appdef_ignores_defaults_the_component_does_not_take() -> None:
    # upstream's: one [component:...] section may serve components of other signatures
    app = specs.materialize_appdef(_comp, ["--name", "hi"], {"n": "2", "not_a_param": "x"})
    assert app.roles[0].num_replicas == 2
    with pytest.raises(ComponentArgError, match="unknown default 'not_a_param'"):
        specs.materialize_appdef(
            _comp, ["--name", "hi"], {"not_a_param": "x"}, strict_defaults=True
        )


def test_materialize_appdef_takes_typed_list_and_dict_defaults_as_given() -> None:
    defaults = {"env": {"PATH": ["/a", "/b"]}, "tags": ["x", "y"], "n": 2}
    app = specs.materialize_appdef(_comp, ["--name", "hi"], defaults)  # type: ignore[arg-type]
    assert app.roles[0].env == {"PATH": "/a:/b"}
    assert (app.metadata, app.roles[0].num_replicas) == ({"tags": "x,y"}, 2)
    # the command line still wins over them
    app = specs.materialize_appdef(_comp, ["--name", "hi", "--tags", "z"], defaults)  # type: ignore[arg-type]
    assert app.metadata == {"tags": "z"}


def test_builders_module_names_and_config_values() -> None:
    from torchx.specs.builders import make_app_handle, materialize_appdef, parse_args, parse_mounts

    # config: Python values that win over the command line; a name it gives is not required
    app = materialize_appdef(_comp, ["--n", "2"], config={"name": "from_config", "n": 5})
    assert (app.name, app.roles[0].num_replicas) == ("from_config", 5)
    ns = parse_args(_comp, ["--name", "a", "--env", "K=v1,v2", "p", "q"])
    assert isinstance(ns, argparse.Namespace)
    assert vars(ns) == {
        "name": "a",
        "env": {"K": ["v1", "v2"]},
        "tags": None,
        "n": 1,
        "args": ["p", "q"],
    }
    assert make_app_handle("local", "s", "app-1") == "local://s/app-1"
    assert parse_mounts(["type=volume,src=v,dst=/v"]) == [specs.VolumeMount(src="v", dst_path="/v")]


def test_parse_mounts_expands_home_and_fails_as_a_key_error() -> None:
    mounts = specs.parse_mounts(["type=bind,src=~/data,dst=/data,readonly"])
    assert mounts == [
        specs.BindMount(src_path=os.path.expanduser("~/data"), dst_path="/data", read_only=True)
    ]
    assert not mounts[0].src_path.startswith("~")
    with pytest.raises(KeyError):  # upstream's exception for a bad option
        specs.parse_mounts(["src=/a,dst=/b"])
    with pytest.raises(KeyError):
        specs.parse_mounts(["type=bind,source=/a,dst=/b,colour=red"])


def test_resource_without_arguments_is_upstreams_default() -> None:
    assert specs.resource() == specs.Resource(cpu=2, gpu=0, memMB=1024)


@pytest.mark.parametrize("name", ["NULL", "MISSING"])
def test_reserved_named_resources(name: str) -> None:
    assert specs.named_resources[name] is specs.NULL_RESOURCE
    assert name in specs.named_resources
    assert specs.resource(h=name) is specs.NULL_RESOURCE


def test_runopts_dict_option_with_an_empty_list_default() -> None:
    opts = specs.runopts()
    opts.add("labels", type_=Dict[str, str], default=[], help="labels of the job")
    cfg = opts.resolve({})
    assert cfg["labels"] == {}


def _lint(
    tmp_path: Path, source: str, fn: str, validators: list[object] | None = None
) -> list[str]:
    from torchx.specs.file_linter import validate

    path = tmp_path / "comp.py"
    path.write_text(textwrap.dedent(source))
    return [m.description for m in validate(str(path), fn, validators)]  # type: ignore[arg-type]


def test_validate_does_not_require_a_docstring(tmp_path: Path) -> None:
    source = """
        from typing import Dict, List, Optional
        from torchx.specs import AppDef

        def comp(env: Optional[Dict[str, List[str]]] = None) -> AppDef:
            return AppDef(name="x")
    """
    assert _lint(tmp_path, source, "comp") == []


def test_documented_validator_classes(tmp_path: Path) -> None:
    from torchx.specs.file_linter import (
        ArgTypeValidator,
        ComponentFnVisitor,
        ComponentFunctionValidator,
        LinterMessage,
        ReturnTypeValidator,
    )

    source = """
        def comp(a: object) -> int:
            '''Doc.'''
    """
    assert issubclass(ArgTypeValidator, ComponentFunctionValidator)
    only_return = _lint(tmp_path, source, "comp", [ReturnTypeValidator()])
    assert len(only_return) == 1 and "-> AppDef" in only_return[0]
    only_args = _lint(tmp_path, source, "comp", [ArgTypeValidator()])
    assert len(only_args) == 1 and "`object`" in only_args[0]

    class NoUnderscore(ComponentFunctionValidator):
        def validate(self, app_specs_func_def: ast.FunctionDef) -> list[LinterMessage]:
            if "_" in app_specs_func_def.name:
                return [self._gen_linter_message("no underscores", app_specs_func_def.lineno)]
            return []

    visitor = ComponentFnVisitor("my_comp", [NoUnderscore()])
    visitor.visit(ast.parse("def other(): pass\n\ndef my_comp(): pass\n"))
    assert [(m.name, m.description, m.line) for m in visitor.linter_errors] == [
        ("NoUnderscore", "no underscores", 3)
    ]


def test_help_formatter_shows_defaults_and_required() -> None:
    from torchx.specs.file_linter import TorchXArgumentHelpFormatter

    parser = argparse.ArgumentParser(prog="comp", formatter_class=TorchXArgumentHelpFormatter)
    parser.add_argument("--image", default="pytorch:latest", help="container image")
    parser.add_argument("--script", required=True, help="the script")
    text = " ".join(parser.format_help().split())
    assert "container image (default: pytorch:latest)" in text
    assert "the script (required)" in text


def test_upstreams_other_homes_of_the_exceptions_get_type_name_and_mount_type() -> None:
    from torchx.specs.api import (
        MountType,
        UnknownAppException,
        UnknownSchedulerException,
        get_type_name,
    )
    from torchx.specs.errors import UnknownAppError, UnknownSchedulerError

    assert UnknownAppException is UnknownAppError
    assert UnknownSchedulerException is UnknownSchedulerError
    assert get_type_name(List[str]) == "typing.List[str]"
    assert MountType is specs.MountType
    assert [m.value for m in MountType] == ["bind", "volume", "device"]
    assert MountType.BIND == "bind" and MountType("device") is MountType.DEVICE
    [mount] = specs.parse_mounts([f"type={MountType.VOLUME},src=cache,dst=/cache"])
    assert isinstance(mount, specs.VolumeMount)


def test_torchx_version_is_torchx_specs_version() -> None:
    import torchx.version

    assert torchx.version.__version__ == specs.__version__
    assert isinstance(torchx.version.__version__, str) and torchx.version.__version__


def test_dataclasses_calls_work_on_the_spec_types() -> None:
    import dataclasses

    role = Role("trainer", image="img", entrypoint="python", env={"A": "1"})
    app = AppDef("app", [role], metadata={"k": "v"})
    assert dataclasses.is_dataclass(app) and dataclasses.is_dataclass(specs.Resource)
    # asdict recurses as upstream's did (enums stay enum members)
    got = dataclasses.asdict(app)
    assert got["roles"][0]["env"] == {"A": "1"} and got["metadata"] == {"k": "v"}
    assert got["roles"][0]["resource"] == attrs_asdict(role.resource)
    assert got["roles"][0]["retry_policy"] is specs.RetryPolicy.APPLICATION
    # replace goes through the constructor: a new object, the old one unchanged
    moved = dataclasses.replace(role, image="other", num_replicas=2)
    assert (moved.image, moved.num_replicas, role.image) == ("other", 2, "img")
    assert moved == Role(
        "trainer", image="other", entrypoint="python", env={"A": "1"}, num_replicas=2
    )
    with pytest.raises(TypeError, match="nope"):
        dataclasses.replace(role, nope=1)
    names = [f.name for f in dataclasses.fields(specs.Resource)]
    assert names == ["cpu", "gpu", "memMB", "capabilities", "devices", "tags"]
    assert dataclasses.fields(role) == dataclasses.fields(Role)
    status = specs.AppStatus(specs.AppState.RUNNING)
    assert dataclasses.asdict(status)["state"] == specs.AppState.RUNNING
    mount = specs.BindMount(src_path="/a", dst_path="/b")
    assert dataclasses.replace(mount, read_only=True).read_only


def test_a_subclass_gets_its_own_dataclass_fields() -> None:
    import dataclasses

    import attrs

    @attrs.define(eq=True)
    class MyRole(Role):
        team: str = "ml"

    names = [f.name for f in dataclasses.fields(MyRole)]
    assert names[-1] == "team" and "team" not in [f.name for f in dataclasses.fields(Role)]


def test_importing_torchx_specs_imports_no_dataclasses() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from torchx.specs import AppDef, Role, Resource; "
        "assert 'dataclasses' not in sys.modules, 'dataclasses was imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)

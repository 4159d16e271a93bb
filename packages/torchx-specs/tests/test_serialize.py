"""Tests for torchx.specs.serialize: round trips, wire format, strict reading, error paths."""

from __future__ import annotations

import copy
import enum
import json
import subprocess
import sys
import typing
from pathlib import Path
from typing import Any, Literal

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchx.specs import _converter, _plain, serialize
from torchx.specs.api import (
    AppDef,
    AppState,
    AppStatus,
    ReplicaStatus,
    Resource,
    RetryPolicy,
    Role,
    RoleStatus,
)
from torchx.specs.errors import SpecError
from torchx.specs.mounts import BindMount, DeviceMount, VolumeMount
from torchx.specs.serialize import (
    API_VERSION,
    KINDS,
    SUPPORTED_API_VERSIONS,
    SerializationError,
    dumps_json,
    dumps_yaml,
    from_document,
    load_appdef_file,
    loads_json,
    loads_yaml,
    structure,
    to_document,
    unstructure,
)
from torchx.specs.workspace import Workspace


def _full_role(name: str = "trainer") -> Role:
    return Role(
        name=name,
        image="pytorch/torch:2.3",
        min_replicas=2,
        entrypoint="python",
        args=["-m", "train", "--lr", "0.1"],
        env={"LOGLEVEL": "INFO"},
        num_replicas=4,
        max_retries=3,
        retry_policy=RetryPolicy.REPLICA,
        resource=Resource(
            cpu=8,
            gpu=1,
            memMB=32768,
            capabilities={"node.kubernetes.io/instance-type": "p3.2xlarge", "n": [1, {"a": None}]},
            devices={"vpc.amazonaws.com/efa": 1},
            tags={"torchx.specs/named_resource": "gpu.small", "ratio": 0.5},
        ),
        port_map={"tensorboard": 6006},
        metadata={"k8s": {"labels": {"team": "ml"}}, "flag": True},
        mounts=[
            BindMount(src_path="/data", dst_path="/mnt/data", read_only=True),
            VolumeMount(src="cache", dst_path="/cache"),
            DeviceMount(src_path="/dev/fuse", dst_path="/dev/fuse", permissions="rw"),
        ],
        workspace=Workspace(projects={"~/proj": "", "~/lib": "lib"}),
        overrides={"priorityClassName": "high"},
    )


def _full_app() -> AppDef:
    return AppDef(
        name="train",
        roles=[_full_role(), Role(name="ps", image="img")],
        metadata={"owner": "me"},
    )


def _full_status() -> AppStatus:
    return AppStatus(
        state=AppState.RUNNING,
        num_restarts=1,
        msg="going",
        structured_error_msg='{"message": "x"}',
        ui_url="http://ui",
        roles=[
            RoleStatus(
                "trainer",
                [
                    ReplicaStatus(0, AppState.RUNNING, "trainer", "host0"),
                    ReplicaStatus(1, AppState.FAILED, "trainer", "", exit_code=1),
                ],
            )
        ],
    )


def _messages(call: Any) -> list[str]:
    with pytest.raises(SerializationError) as info:
        call()
    return info.value.errors


EXAMPLES: list[Any] = [
    _full_app(),
    AppDef(name="empty"),
    _full_role(),
    Role(name="r", image="i"),
    Resource(cpu=1, gpu=0, memMB=1024),
    RetryPolicy.ROLE,
    AppState.CANCELLED,
    BindMount("/a", "/b"),
    VolumeMount("v", "/c", True),
    DeviceMount("/dev/x", "/dev/y", "r"),
    Workspace({"a": "b"}),
    _full_status(),
    AppStatus(AppState.UNKNOWN),
    RoleStatus("r"),
    ReplicaStatus(3, AppState.PENDING, "r", "h", exit_code=None),
]


# ------------------------------------------------------------------ round trips


@pytest.mark.parametrize("obj", EXAMPLES, ids=lambda o: type(o).__name__)
def test_every_spec_type_round_trips_through_data_documents_json_and_yaml(obj: Any) -> None:
    cls = type(obj)
    data = unstructure(obj)
    assert json.loads(json.dumps(data)) == data  # JSON-safe as it is
    assert structure(data, cls) == obj
    doc = to_document(obj)
    assert doc["apiVersion"] == API_VERSION
    assert doc["kind"] == cls.__name__
    assert from_document(doc) == obj
    assert from_document(doc, cls) == obj
    assert loads_json(dumps_json(obj)) == obj
    assert loads_json(dumps_json(obj, indent=2), cls) == obj
    assert loads_yaml(dumps_yaml(obj)) == obj
    assert loads_yaml(dumps_yaml(obj).encode(), cls) == obj


def test_structured_objects_share_nothing_with_the_input_data() -> None:
    data = unstructure(_full_app())
    app = structure(data, AppDef)
    data["roles"][0]["args"].append("--more")
    data["roles"][0]["metadata"]["k8s"]["labels"]["team"] = "other"
    data["roles"][0]["resource"]["capabilities"]["n"][1]["a"] = 1
    assert app == _full_app()


def test_output_is_deterministic_and_in_declaration_order() -> None:
    first = dumps_json(_full_app())
    assert first == dumps_json(_full_app())
    assert list(unstructure(_full_role())) == [a.name for a in attrs.fields(Role)]
    assert list(unstructure(Resource(1, 2, 3))) == [
        "cpu",
        "gpu",
        "memMB",
        "capabilities",
        "devices",
        "tags",
    ]


# ------------------------------------------------------------------ wire format


def test_wire_format_uses_field_names_enum_names_and_tagged_mounts() -> None:
    role = unstructure(_full_role())
    assert role["retry_policy"] == "REPLICA"
    assert role["resource"]["memMB"] == 32768
    assert role["mounts"] == [
        {"type": "bind", "src_path": "/data", "dst_path": "/mnt/data", "read_only": True},
        {"type": "volume", "src": "cache", "dst_path": "/cache", "read_only": False},
        {"type": "device", "src_path": "/dev/fuse", "dst_path": "/dev/fuse", "permissions": "rw"},
    ]
    assert role["workspace"] == {"projects": {"~/proj": "", "~/lib": "lib"}}
    status = unstructure(_full_status())
    assert status["state"] == "RUNNING"
    assert status["roles"][0]["replicas"][1] == {
        "id": 1,
        "state": "FAILED",
        "role": "trainer",
        "hostname": "",
        "structured_error_msg": "<NONE>",
        "exit_code": 1,
    }
    assert unstructure(AppState.SUCCEEDED) == "SUCCEEDED"


def test_fields_with_defaults_may_be_left_out_when_reading() -> None:
    app = structure({"name": "a", "roles": [{"name": "r", "image": "i"}]}, AppDef)
    assert app == AppDef(name="a", roles=[Role(name="r", image="i")])
    assert structure({"cpu": 1, "gpu": 0, "memMB": 2}, Resource) == Resource(1, 0, 2)
    assert structure(
        {"type": "device", "src_path": "/dev/x", "dst_path": "/dev/x"}, serialize.Mount
    ) == (DeviceMount("/dev/x", "/dev/x"))


def test_writing_accepts_tuples_for_lists_and_reads_them_back_as_lists() -> None:
    role = Role(name="r", image="i", args=("a", "b"))  # type: ignore[arg-type]
    assert structure(unstructure(role), Role).args == ["a", "b"]


def test_a_role_subclass_is_written_as_a_role() -> None:
    @attrs.define(eq=True)
    class MyRole(Role):
        pass

    doc = to_document(MyRole(name="r", image="i"))
    assert doc["kind"] == "Role"
    assert from_document(doc) == Role(name="r", image="i")
    assert to_document(_full_role(), kind="Role")["kind"] == "Role"


def test_to_document_rejects_kinds_that_do_not_fit() -> None:
    with pytest.raises(SerializationError, match="kind 'AppDef' does not fit a Role"):
        to_document(_full_role(), kind="AppDef")
    with pytest.raises(SerializationError, match=r"unknown kind 'Rol' \(did you mean 'Role'\?\)"):
        to_document(_full_role(), kind="Rol")
    with pytest.raises(SerializationError, match="cannot make a document of a int"):
        to_document(3)


# ------------------------------------------------------------------ strict reading


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("num_replicas", True, "roles[0].num_replicas: expected int, got True"),
        ("num_replicas", "4", "roles[0].num_replicas: expected int, got '4'"),
        ("num_replicas", 4.0, "roles[0].num_replicas: expected int, got 4.0"),
        ("name", 7, "roles[0].name: expected str, got 7"),
        ("args", "abc", "roles[0].args: expected list, got 'abc'"),
        ("args", ["a", 1], "roles[0].args[1]: expected str, got 1"),
        ("env", {"A": 1}, "roles[0].env['A']: expected str, got 1"),
        ("env", ["A"], "roles[0].env: expected dict, got ['A']"),
        ("min_replicas", "2", "roles[0].min_replicas: expected int or null, got '2'"),
        ("port_map", {"p": False}, "roles[0].port_map['p']: expected int, got False"),
        ("workspace", "~/proj", "roles[0].workspace: expected dict or null, got '~/proj'"),
        (
            "retry_policy",
            "replica",
            "roles[0].retry_policy: expected one of REPLICA, APPLICATION, ROLE, got 'replica' "
            "(did you mean 'REPLICA'?)",
        ),
        (
            "retry_policy",
            0,
            "roles[0].retry_policy: expected one of REPLICA, APPLICATION, ROLE, got 0",
        ),
        (
            "metadata",
            {"a": [1, float("nan")]},
            "roles[0].metadata['a'][1]: expected a finite number, got nan",
        ),
        (
            "metadata",
            {"a": {"b": {1, 2}}},
            "roles[0].metadata['a']['b']: expected a JSON value (dict, list, str, int, float, "
            "bool or null), got {1, 2}",
        ),
        ("overrides", {1: "x"}, "roles[0].overrides[1]: expected a str key, got 1"),
    ],
)
def test_no_coercion_and_every_bad_field_is_named(field: str, value: Any, message: str) -> None:
    data = unstructure(AppDef("a", [_full_role()]))
    data["roles"][0][field] = value
    assert _messages(lambda: structure(data, AppDef)) == [message]


def test_the_documented_error_messages() -> None:
    data = unstructure(_full_app())
    data["roles"][1]["resource"]["memMB"] = "lots"
    del data["roles"][0]["image"]
    data["roles"][0]["imagee"] = "img"
    with pytest.raises(SerializationError) as info:
        structure(data, AppDef)
    assert info.value.errors == [
        "roles[0].image: required field missing",
        "roles[0]: unknown field 'imagee' (did you mean 'image'?)",
        "roles[1].resource.memMB: expected int, got 'lots'",
    ]
    assert str(info.value) == "invalid AppDef: " + "; ".join(info.value.errors)
    assert isinstance(info.value, SpecError)
    assert isinstance(info.value, ValueError)


def test_unknown_field_without_a_close_match_lists_the_known_ones() -> None:
    data = {"cpu": 1, "gpu": 0, "memMB": 1, "zzz": 0}
    assert _messages(lambda: structure(data, Resource)) == [
        "unknown field 'zzz' (expected one of cpu, gpu, memMB, capabilities, devices, tags)"
    ]


def test_mount_errors_name_the_tag_and_the_member_fields() -> None:
    data = unstructure(AppDef("a", [_full_role()]))
    mounts = data["roles"][0]["mounts"]
    mounts[0]["type"] = "bnd"
    mounts[1]["readonly"] = True
    del mounts[2]["type"]
    mounts.append("type=bind,src=/a,dst=/b")
    assert _messages(lambda: structure(data, AppDef)) == [
        "roles[0].mounts[0].type: expected one of bind, volume, device, got 'bnd' "
        "(did you mean 'bind'?)",
        "roles[0].mounts[1]: unknown field 'readonly' (did you mean 'read_only'?)",
        "roles[0].mounts[2].type: required field missing (one of bind, volume, device)",
        "roles[0].mounts[3]: expected dict, got 'type=bind,src=/a,dst=/b'",
    ]


def test_long_error_lists_are_cut_in_the_message_but_kept_in_errors() -> None:
    data = {"name": "a", "roles": [{"name": i, "image": "x"} for i in range(30)]}
    with pytest.raises(SerializationError) as info:
        structure(data, AppDef)
    assert len(info.value.errors) == 30
    assert str(info.value).endswith("; ... and 20 more")


@pytest.mark.parametrize("data", [None, 5, "AppDef", [], [{"name": "a"}], (1,), object(), b"{}"])
def test_non_mapping_input_is_one_clear_error(data: Any) -> None:
    with pytest.raises(SerializationError, match=r"^invalid AppDef: expected dict, got "):
        structure(data, AppDef)


def test_unstructure_rejects_values_that_have_no_json_form_naming_where() -> None:
    class Opaque:
        def __repr__(self) -> str:
            return "<opaque>"

    role = Role(name="r", image="i", args=["a", 3], metadata={"x": [Opaque()]})  # type: ignore[list-item]
    role.resource.tags["when"] = float("inf")
    role.resource.capabilities[5] = "x"  # type: ignore[index]
    assert _messages(lambda: unstructure(role)) == [
        "args[1]: expected str, got 3",
        "resource.capabilities[5]: expected a str key, got 5",
        "resource.tags['when']: expected a finite number, got inf",
        "metadata['x'][0]: expected a JSON value (dict, list, str, int, float, bool or null), "
        "got <opaque>",
    ]
    with pytest.raises(
        SerializationError,
        match=r"^cannot serialize AppStatus: num_restarts: expected int, got True$",
    ):
        unstructure(AppStatus(AppState.RUNNING, num_restarts=True))


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("name", 1, "name: expected str, got 1"),
        ("args", "abc", "args: expected list, got 'abc'"),
        ("env", {"A": 1}, "env['A']: expected str, got 1"),
        ("min_replicas", "1", "min_replicas: expected int, got '1'"),
        ("retry_policy", "NOPE", "retry_policy: expected RetryPolicy, got 'NOPE'"),
        ("resource", None, "resource: expected Resource, got None"),
        ("mounts", [1], "mounts[0]: expected BindMount, VolumeMount or DeviceMount, got 1"),
        ("workspace", "~/p", "workspace: expected Workspace, got '~/p'"),
        ("port_map", {"p": "80"}, "port_map['p']: expected int, got '80'"),
    ],
)
def test_unstructure_names_each_mistyped_field(field: str, value: Any, message: str) -> None:
    role = Role(name="r", image="i")
    setattr(role, field, value)
    assert _messages(lambda: unstructure(role)) == [message]


# ------------------------------------------------------------------ documents and versions


def test_version_table_reads_what_it_writes() -> None:
    assert API_VERSION in SUPPORTED_API_VERSIONS
    assert set(KINDS) == {
        "AppDef",
        "Role",
        "Resource",
        "RetryPolicy",
        "AppState",
        "BindMount",
        "VolumeMount",
        "DeviceMount",
        "Workspace",
        "AppStatus",
        "RoleStatus",
        "ReplicaStatus",
    }


def test_unknown_api_version_names_the_versions_this_release_reads() -> None:
    doc = to_document(_full_app())
    doc["apiVersion"] = "torchx.specs/v2"
    with pytest.raises(SerializationError) as info:
        from_document(doc)
    assert info.value.errors == [
        "apiVersion: unsupported version 'torchx.specs/v2' (this release of torchx-specs reads "
        + ", ".join(SUPPORTED_API_VERSIONS)
        + ")"
    ]


@pytest.mark.parametrize(
    ("doc", "errors"),
    [
        ({}, [f"{k}: required field missing" for k in ("apiVersion", "kind", "spec")]),
        (
            {"apiVersion": API_VERSION, "kind": "AppDeff", "spec": {}},
            [
                "kind: unknown kind 'AppDeff' (did you mean 'AppDef'?) (expected one of "
                + ", ".join(KINDS)
                + ")"
            ],
        ),
        (
            {"apiVersion": 1, "kind": ["AppDef"], "spec": {}, "specs": {}},
            [
                "unknown field 'specs' (did you mean 'spec'?)",
                "apiVersion: unsupported version 1 (this release of torchx-specs reads "
                + ", ".join(SUPPORTED_API_VERSIONS)
                + ")",
                "kind: expected str, got ['AppDef']",
            ],
        ),
    ],
)
def test_malformed_envelopes(doc: dict[str, Any], errors: list[str]) -> None:
    assert _messages(lambda: from_document(doc)) == errors


def test_from_document_checks_the_kind_against_the_class() -> None:
    doc = to_document(_full_role())
    assert _messages(lambda: from_document(doc, AppDef)) == ["kind: expected 'AppDef', got 'Role'"]
    with pytest.raises(SerializationError, match=r"^invalid document: expected a dict"):
        from_document([doc])


def test_spec_errors_in_a_document_use_paths_relative_to_spec() -> None:
    doc = to_document(_full_app())
    doc["spec"]["roles"][1]["resource"]["memMB"] = "lots"
    with pytest.raises(SerializationError) as info:
        loads_json(json.dumps(doc))
    assert str(info.value) == "invalid AppDef: roles[1].resource.memMB: expected int, got 'lots'"


def test_older_versions_are_upgraded_by_their_migration_hook(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def from_v0(kind: str, spec: Any) -> Any:
        assert kind == "Resource"
        spec = dict(spec)
        spec["memMB"] = spec.pop("mem_mb")
        return spec

    monkeypatch.setitem(serialize._MIGRATIONS, "torchx.specs/v0", from_v0)
    doc = {
        "apiVersion": "torchx.specs/v0",
        "kind": "Resource",
        "spec": {"cpu": 1, "gpu": 0, "mem_mb": 64},
    }
    assert from_document(doc) == Resource(1, 0, 64)


# ------------------------------------------------------------------ JSON and YAML text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "invalid JSON at line 1 column 2: Expecting property name enclosed in double quotes"),
        ('{"a": NaN}', "invalid JSON: NaN is not a valid JSON number"),
        ("[" * 100_000, "invalid JSON: nested too deeply"),
        (b"\xff\xfe\x00", "invalid JSON: "),
        (None, "expected JSON text (str or bytes), got None"),
    ],
)
def test_bad_json_text(text: Any, message: str) -> None:
    with pytest.raises(SerializationError) as info:
        loads_json(text)
    assert str(info.value).startswith(message)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: [1", "invalid YAML at line 2 column 1: "),  # wording differs with(out) libyaml
        ("!!python/object/apply:os.system ['true']", "invalid YAML at line 1 column 1: could not"),
        (
            "a: 1\n---\nb: 2\n",
            "invalid YAML at line 2 column 1: expected a single document in the stream, but found another",
        ),
        ("", "invalid document: expected a dict with keys apiVersion, kind and spec, got None"),
    ],
)
def test_bad_yaml_text(text: str, message: str) -> None:
    with pytest.raises(SerializationError) as info:
        loads_yaml(text)
    assert str(info.value).startswith(message)


def test_yaml_scalars_are_not_coerced_into_strings() -> None:
    text = dumps_yaml(Role(name="r", image="i")).replace("image: i", "image: 2024-01-01")
    with pytest.raises(
        SerializationError, match=r"image: expected str, got datetime.date\(2024, 1, 1\)"
    ):
        loads_yaml(text)
    tricky = Role(name="yes", image="1.0", entrypoint="null", args=["~", "0x1F", "2024-01-01", ""])
    assert loads_yaml(dumps_yaml(tricky)) == tricky


def test_yaml_uses_the_libyaml_safe_classes_when_present(monkeypatch: pytest.MonkeyPatch) -> None:
    import yaml  # the test extra installs PyYAML

    seen: list[Any] = []
    real_load, real_dump = yaml.load, yaml.dump
    monkeypatch.setattr(
        yaml, "load", lambda text, Loader: seen.append(Loader) or real_load(text, Loader=Loader)
    )
    monkeypatch.setattr(
        yaml,
        "dump",
        lambda data, Dumper, **kw: seen.append(Dumper) or real_dump(data, Dumper=Dumper, **kw),
    )
    loads_yaml(dumps_yaml(Resource(1, 0, 1)))
    expected_dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    expected_loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    assert seen == [expected_dumper, expected_loader]


def test_missing_pyyaml_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "yaml", None)
    for call in (lambda: dumps_yaml(Resource(1, 0, 1)), lambda: loads_yaml("a: 1")):
        with pytest.raises(SerializationError, match=r"needs PyYAML.*: pip install PyYAML \("):
            call()


# ------------------------------------------------------------------ AppDef files


@pytest.mark.parametrize("suffix", [".json", ".yaml", ".yml", ".appdef"])
def test_load_appdef_file_reads_documents_by_extension_or_content(
    tmp_path: Path, suffix: str
) -> None:
    path = tmp_path / f"app{suffix}"
    text = (
        dumps_yaml(_full_app())
        if suffix in (".yaml", ".yml")
        else dumps_json(_full_app(), indent=2)
    )
    path.write_text(text)
    assert load_appdef_file(path) == _full_app()
    assert load_appdef_file(str(path)) == _full_app()


def test_load_appdef_file_accepts_a_bare_hand_written_appdef(tmp_path: Path) -> None:
    path = tmp_path / "app.yaml"
    path.write_text(
        "name: echo\nroles:\n  - name: hello\n    image: /tmp\n    entrypoint: echo\n    args: [hi]\n"
    )
    assert load_appdef_file(path) == AppDef(
        "echo", [Role("hello", image="/tmp", entrypoint="echo", args=["hi"])]
    )
    sniffed = tmp_path / "app.txt"
    sniffed.write_text("name: echo\n")
    assert load_appdef_file(sniffed) == AppDef("echo")


def test_load_appdef_file_errors_start_with_the_path(tmp_path: Path) -> None:
    path = tmp_path / "app.yaml"
    path.write_text("name: echo\nroles:\n  - name: hello\n    imag: /tmp\n")
    with pytest.raises(SerializationError) as info:
        load_appdef_file(path)
    assert info.value.errors == [
        f"{path}: roles[0].image: required field missing",
        f"{path}: roles[0]: unknown field 'imag' (did you mean 'image'?)",
    ]
    assert str(info.value).startswith(f"{path}: invalid AppDef: ")
    with pytest.raises(SerializationError, match="cannot read AppDef file"):
        load_appdef_file(tmp_path / "missing.json")
    status = tmp_path / "status.json"
    status.write_text(dumps_json(_full_status()))
    with pytest.raises(SerializationError, match="kind: expected 'AppDef', got 'AppStatus'"):
        load_appdef_file(status)


# ------------------------------------------------------------------ any attrs class


class Color(enum.StrEnum):
    RED = "r"
    GREEN = "g"


class Mode(enum.Enum):
    A = 1
    B = 2


@attrs.define
class Node:
    name: str
    children: list[Node] = attrs.field(factory=list)


@attrs.define
class Thing:
    ratio: float
    _hidden: int
    choice: Literal["a", "b"] = "a"
    either: str | int = 0
    where: Path = Path("/tmp")
    color: Color = Color.RED
    mode: Mode = Mode.A
    colors: list[Color] = attrs.field(factory=list)
    from_self: list[int] = attrs.field(
        default=attrs.Factory(lambda s: [s._hidden], takes_self=True)
    )
    keyword: int = attrs.field(default=3, kw_only=True)
    tree: Node | None = None


def test_any_attrs_class_round_trips_with_the_same_rules() -> None:
    thing = Thing(
        1.5,
        2,
        choice="b",
        either="s",
        where=Path("/x"),
        color=Color.GREEN,
        mode=Mode.B,
        colors=[Color.RED],
        keyword=5,
        tree=Node("root", [Node("leaf")]),
    )
    data = unstructure(thing)
    assert data["color"] == "GREEN"
    assert data["mode"] == "B"
    assert data["where"] == "/x"
    assert data["tree"] == {"name": "root", "children": [{"name": "leaf", "children": []}]}
    assert structure(data, Thing) == thing
    assert from_document(to_document(thing), Thing) == thing
    del data["from_self"]
    assert structure(data, Thing).from_self == [2]
    assert structure({"ratio": 1, "_hidden": 4}, Thing) == Thing(1.0, 4)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("ratio", True, "ratio: expected a finite number, got True"),
        ("color", "r", "color: expected one of RED, GREEN, got 'r'"),
        ("mode", 1, "mode: expected one of A, B, got 1"),
        ("choice", "c", "choice: expected one of 'a', 'b', got 'c'"),
        ("either", 1.5, "either: expected str | int, got 1.5"),
        ("where", 3, "where: expected str, got 3"),
        (
            "tree",
            {"name": "r", "children": [{"name": 1}]},
            "tree.children[0].name: expected str, got 1",
        ),
    ],
)
def test_any_attrs_class_is_read_strictly(field: str, value: Any, message: str) -> None:
    data = unstructure(Thing(1.0, 1))
    data[field] = value
    assert _messages(lambda: structure(data, Thing)) == [message]


def test_types_without_a_json_form_are_refused_clearly() -> None:
    assert _messages(lambda: unstructure((1, 2))) == [
        "cannot write (1, 2): values of type tuple have no JSON form"
    ]
    assert _messages(lambda: structure([1], tuple[int, ...])) == [
        "cannot read values of type tuple[int, ...]"
    ]
    assert unstructure([Node("a"), 1, None, {"k": Mode.A}]) == [
        {"name": "a", "children": []},
        1,
        None,
        {"k": "A"},
    ]


# ------------------------------------------------------------------ hypothesis: round trips

_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
_json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | _text
)
_json = st.recursive(
    _json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=8,
)
_json_dicts = st.dictionaries(_text, _json, max_size=3)
_resources = st.builds(
    Resource,
    cpu=st.integers(),
    gpu=st.integers(),
    memMB=st.integers(),
    capabilities=_json_dicts,
    devices=st.dictionaries(_text, st.integers(), max_size=2),
    tags=_json_dicts,
)
_mounts = st.one_of(
    st.builds(BindMount, _text, _text, st.booleans()),
    st.builds(VolumeMount, _text, _text, st.booleans()),
    st.builds(DeviceMount, _text, _text, _text),
)
_roles = st.builds(
    Role,
    name=_text,
    image=_text,
    min_replicas=st.none() | st.integers(),
    entrypoint=_text,
    args=st.lists(_text, max_size=4),
    env=st.dictionaries(_text, _text, max_size=3),
    num_replicas=st.integers(),
    max_retries=st.integers(),
    retry_policy=st.sampled_from(RetryPolicy),
    resource=_resources,
    port_map=st.dictionaries(_text, st.integers(), max_size=2),
    metadata=_json_dicts,
    mounts=st.lists(_mounts, max_size=3),
    workspace=st.none() | st.builds(Workspace, st.dictionaries(_text, _text, max_size=3)),
    overrides=_json_dicts,
)
_appdefs = st.builds(
    AppDef,
    name=_text,
    roles=st.lists(_roles, max_size=3),
    metadata=st.dictionaries(_text, _text, max_size=3),
)
_replicas = st.builds(
    ReplicaStatus,
    id=st.integers(),
    state=st.sampled_from(AppState),
    role=_text,
    hostname=_text,
    structured_error_msg=_text,
    exit_code=st.none() | st.integers(),
)
_statuses = st.builds(
    AppStatus,
    state=st.sampled_from(AppState),
    num_restarts=st.integers(),
    msg=_text,
    structured_error_msg=_text,
    ui_url=st.none() | _text,
    roles=st.lists(st.builds(RoleStatus, _text, st.lists(_replicas, max_size=3)), max_size=3),
)

_settings = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_settings
@given(obj=_appdefs | _statuses)
def test_arbitrary_specs_round_trip_through_dict_json_and_yaml(obj: Any) -> None:
    cls = type(obj)
    assert structure(unstructure(obj), cls) == obj
    # what is written is read by the fast path, and both halves write and read it the same
    data = _plain.unstructure(obj)
    assert data == _converter.unstructure(obj, cls)
    assert _plain.structure(data, cls) == obj == _converter.structure(data, cls)
    assert loads_json(dumps_json(obj)) == obj
    assert loads_yaml(dumps_yaml(obj)) == obj


def _without_defaults(cls: type, data: dict[str, Any], drop: st.DataObject) -> dict[str, Any]:
    """``data`` as a person writes it: some fields that hold their default left out."""
    out = {}
    for a in attrs.fields(cls):
        value = data[a.name]
        if attrs.has(a.type) and isinstance(value, dict):
            value = _without_defaults(a.type, value, drop)
        elif a.name == "roles":
            value = [_without_defaults(Role, r, drop) for r in value]
        default = a.default.factory() if isinstance(a.default, attrs.Factory) else a.default  # type: ignore[arg-type]
        at_default = a.default is not attrs.NOTHING and value == _default_data(default)
        if at_default and drop.draw(st.booleans(), label=f"leave out {a.name}"):
            continue
        out[a.name] = value
    return out


def _default_data(default: Any) -> Any:
    return default if default is None or isinstance(default, str | int) else unstructure(default)


@settings(_settings, max_examples=60)
@given(app=_appdefs, drop=st.data(), suffix=st.sampled_from([".json", ".yaml", ".appdef"]))
def test_appdef_files_round_trip_whole_or_hand_written(
    app: AppDef, drop: st.DataObject, suffix: str
) -> None:
    """A file of the document (the fast path reads it) and a hand-written file leaving out
    fields at their defaults (the converter fills them in) read as the same AppDef."""
    import tempfile

    bare = _without_defaults(AppDef, unstructure(app), drop)
    with tempfile.TemporaryDirectory() as d:
        whole = Path(d, f"doc{suffix}")
        whole.write_text(dumps_yaml(app) if suffix == ".yaml" else dumps_json(app))
        assert load_appdef_file(whole) == app
        hand = Path(d, f"hand{suffix}")
        hand.write_text(json.dumps(bare) if suffix != ".yaml" else dumps_yaml_data(bare))
        assert load_appdef_file(hand) == app


def dumps_yaml_data(data: Any) -> str:
    """Plain data as YAML, written as ``dumps_yaml`` writes documents."""
    import yaml

    dumper = getattr(yaml, "CSafeDumper", None) or yaml.SafeDumper
    text: str = yaml.dump(
        data, Dumper=dumper, sort_keys=False, allow_unicode=True, default_flow_style=False
    )
    return text


# ------------------------------------------------------------------ hypothesis: malformed input

_OBJECT_FIELDS = "zz_unknown"


def _field_types(cls: type) -> dict[str, Any]:
    attrs.resolve_types(cls)
    return {a.name: a.type for a in attrs.fields(cls)}


def _bad_values(tp: Any) -> list[Any]:
    """Values that can never be valid for ``tp``."""
    origin = typing.get_origin(tp)
    optional = origin is not None and type(None) in typing.get_args(tp) and tp != serialize.Mount
    if optional:
        (tp,) = [a for a in typing.get_args(tp) if a is not type(None)]
        origin = typing.get_origin(tp)
    nulls = [] if optional else [None]
    if tp is str:
        return [1, True, 1.5, [], {}, *nulls]
    if tp is int:
        return ["1", True, 1.5, [], {}, *nulls]
    if tp is float:  # an int is a valid float (a time of 1700000000 seconds)
        return ["1", True, [], {}, *nulls]
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return ["NOT_A_MEMBER", 1, [], *nulls]
    if origin is list:
        return ["x", 1, {}, *nulls]
    if origin is dict:
        return ["x", 1, [], *nulls]
    return ["x", 1, [], *nulls]  # attrs classes and the mount union


def _sites(cls: type, data: dict[str, Any], path: str) -> list[tuple[str, Any]]:
    """Every (mutation, expected first error prefix) that must make ``data`` invalid."""
    sites: list[tuple[str, Any]] = []
    here = f"{path}: " if path else ""
    sites.append((here + f"unknown field '{_OBJECT_FIELDS}'", (data, "extra", None)))
    for field in attrs.fields(cls):
        name, tp = field.name, _field_types(cls)[field.name]
        where = f"{path}.{name}" if path else name
        if field.default is attrs.NOTHING:
            sites.append((f"{where}: required field missing", (data, "del", name)))
        for bad in _bad_values(tp):
            sites.append((f"{where}: expected", (data, "set", (name, bad))))
        value = data[name]
        if tp == list[serialize.Mount]:
            for i, mount in enumerate(value):
                mcls = {"bind": BindMount, "volume": VolumeMount, "device": DeviceMount}[
                    mount["type"]
                ]
                sites.append(
                    (f"{where}[{i}].type: expected one of", (mount, "set", ("type", "bogus")))
                )
                sites += _sites(mcls, mount, f"{where}[{i}]")
        elif typing.get_origin(tp) is list and attrs.has(typing.get_args(tp)[0]):
            for i, item in enumerate(value):
                sites += _sites(typing.get_args(tp)[0], item, f"{where}[{i}]")
        elif attrs.has(tp):
            sites += _sites(tp, value, where)
        elif tp == Workspace | None and value is not None:
            sites += _sites(Workspace, value, where)
        elif tp == dict[str, Any] or tp == dict[str, object]:
            sites.append(
                (f"{where}['k']: expected a JSON value", (data, "set", (name, {"k": {1}})))
            )
    return sites


def _mutate(target: Any) -> None:
    obj, op, arg = target
    if op == "extra":
        obj[_OBJECT_FIELDS] = 1
    elif op == "del":
        del obj[arg]
    else:
        obj[arg[0]] = arg[1]


@_settings
@given(obj=_appdefs | _statuses, data=st.data())
def test_every_mutation_of_a_valid_document_is_reported_at_its_path(
    obj: Any, data: st.DataObject
) -> None:
    cls = type(obj)
    doc = to_document(obj)
    sites = _sites(cls, doc["spec"], "")
    index = data.draw(st.integers(0, len(sites) - 1), label="site")
    # sites hold references into doc: rebuild them on a copy so each draw mutates once
    doc = copy.deepcopy(doc)
    expected, target = _sites(cls, doc["spec"], "")[index]
    _mutate(target)
    for call in (
        lambda: structure(doc["spec"], cls),
        lambda: from_document(doc),
        lambda: loads_json(json.dumps(doc)) if _json_text_safe(doc) else from_document(doc),
    ):
        with pytest.raises(SerializationError) as info:
            call()
        assert any(line.startswith(expected) for line in info.value.errors), (
            expected,
            info.value.errors,
        )


def _json_text_safe(doc: Any) -> bool:
    try:
        json.dumps(doc, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


_any_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


def _near_misses(cls: type) -> st.SearchStrategy[dict[str, Any]]:
    """Dicts whose keys are mostly the class's own field names, with random values."""
    names = [a.name for a in attrs.fields(cls)]
    return st.dictionaries(st.sampled_from([*names, "x"]), _any_json, max_size=len(names))


@_settings
@given(
    cls=st.sampled_from(
        [AppDef, Role, Resource, AppStatus, ReplicaStatus, serialize.Mount, RetryPolicy]
    ),
    data=st.data(),
)
def test_random_input_either_structures_or_raises_serialization_error(
    cls: Any, data: st.DataObject
) -> None:
    strategy = _any_json
    if attrs.has(cls):
        strategy = strategy | _near_misses(cls)
    value = data.draw(strategy, label="value")
    for call in (
        lambda: structure(value, cls),
        lambda: from_document(
            {"apiVersion": API_VERSION, "kind": getattr(cls, "__name__", "x"), "spec": value}
        ),
        lambda: from_document(value),
    ):
        try:
            result = call()
        except SerializationError as e:
            assert e.errors and all(isinstance(line, str) and "\n" not in line for line in e.errors)
        else:
            assert structure(unstructure(result), type(result)) == result
    # The fast path and the converter agree: what the fast path reads, the converter reads
    # the same (what it declines, the converter alone decides).
    _fast_path_agrees(value, cls)


def _fast_path_agrees(value: Any, cls: Any) -> None:
    try:
        fast = _plain.structure(value, cls)
    except Exception:
        return
    assert _converter.structure(value, cls) == fast
    assert _plain.unstructure(fast) == _converter.unstructure(fast, cls)


@_settings
@given(text=st.text() | st.binary())
def test_random_text_either_loads_or_raises_serialization_error(text: str | bytes) -> None:
    for load in (loads_json, loads_yaml):
        try:
            load(text)
        except SerializationError:
            pass


@pytest.mark.parametrize("depth", [50, 5000])
def test_deeply_nested_values_never_escape_as_other_errors(depth: int) -> None:
    nested: Any = "leaf"
    for _ in range(depth):
        nested = [nested]
    role = {"name": "r", "image": "i", "metadata": {"deep": nested}}
    try:
        assert structure(role, Role).metadata["deep"] == nested
    except SerializationError as e:
        assert depth > 1000 and "nested too deeply" in str(e)


# ------------------------------------------------------------------ import cost


def test_importing_torchx_specs_does_not_import_cattrs_json_or_yaml() -> None:
    code = "import sys, torchx.specs; print(sorted(m for m in ('cattrs', 'json', 'yaml') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_large_appdefs_round_trip() -> None:
    app = AppDef("big", [_full_role(f"r{i}") for i in range(1000)])
    assert structure(unstructure(app), AppDef) == app
    assert loads_json(dumps_json(app)) == app

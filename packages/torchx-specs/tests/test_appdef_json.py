"""The AppDef JSON document, and the serializer's standard-library fast path that serves it."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchx.specs import (
    AppDef,
    AppState,
    AppStatus,
    BindMount,
    DeviceMount,
    ReplicaStatus,
    Resource,
    RetryPolicy,
    Role,
    RoleStatus,
    VolumeMount,
    Workspace,
    _plain,
)
from torchx.specs.appdef_json import decode, encode
from torchx.specs.serialize import SerializationError, dumps_json, loads_json

_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | _text,
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
_settings = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_settings
@given(app=_appdefs)
def test_writes_what_the_serializer_writes_and_reads_it_back(app: AppDef) -> None:
    text = encode(app)
    assert text == dumps_json(app)  # byte for byte: documents of either read the same
    back = decode(text)
    assert back == app
    assert back == loads_json(text, AppDef)
    assert _plain.structure(json.loads(text)["spec"], AppDef) == app  # read by the fast path


def _doc(app: AppDef) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(dumps_json(app))
    return doc


def _rich() -> AppDef:
    return AppDef(
        "train",
        [
            Role(
                "trainer",
                image="img",
                entrypoint="python",
                args=["-m", "x"],
                env={"A": "1"},
                num_replicas=2,
                max_retries=1,
                retry_policy=RetryPolicy.ROLE,
                resource=Resource(cpu=2, gpu=0, memMB=64, capabilities={"x": [1.5, None]}),
                port_map={"http": 80},
                metadata={"k": {"n": 1}},
                mounts=[
                    BindMount("/a", "/b", True),
                    VolumeMount("v", "/c"),
                    DeviceMount("/d", "/e"),
                ],
                workspace=Workspace({".": "sub"}),
                overrides={"o": True},
            )
        ],
        metadata={"m": "v"},
    )


@_settings
@given(app=_appdefs, where=st.sampled_from(["spec", "role", "resource"]), value=_json)
def test_a_document_with_a_field_it_does_not_know_is_left_to_the_serializer(
    app: AppDef, where: str, value: Any
) -> None:
    """A document of a later release (a new field) is read as the serializer reads it: here,
    refused with its error, never read with the field dropped."""
    doc = _doc(_rich() if not app.roles else app)
    target = {
        "spec": doc["spec"],
        "role": doc["spec"]["roles"][0],
        "resource": doc["spec"]["roles"][0]["resource"],
    }[where]
    target["zz_new_field"] = value
    text = json.dumps(doc)
    with pytest.raises(SerializationError) as ours:
        decode(text)
    with pytest.raises(SerializationError) as theirs:
        loads_json(text, AppDef)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d.update(apiVersion="torchx.specs/v0"),
        lambda d: d.update(kind="Role"),
        lambda d: d["spec"]["roles"][0].update(num_replicas=True),
        lambda d: d["spec"]["roles"][0].update(retry_policy="SOMETIMES"),
        lambda d: d["spec"]["roles"][0]["mounts"][0].update(type="tmpfs"),
        lambda d: d["spec"]["roles"][0]["resource"].update(cpu="2"),
        lambda d: d["spec"]["roles"][0].pop("image"),
        lambda d: d["spec"].update(metadata={"m": 1}),
    ],
)
def test_anything_else_is_left_to_the_serializer(change: Any) -> None:
    doc = _doc(_rich())
    change(doc)
    text = json.dumps(doc)
    with pytest.raises(SerializationError) as ours:
        decode(text)
    with pytest.raises(SerializationError) as theirs:
        loads_json(text, AppDef)
    assert str(ours.value) == str(theirs.value)


def test_fields_left_out_are_read_as_the_serializer_reads_them() -> None:
    """The serializer fills in defaults; the plain reader leaves that document to it."""
    doc = _doc(_rich())
    del doc["spec"]["roles"][0]["overrides"]
    assert decode(json.dumps(doc)) == loads_json(json.dumps(doc), AppDef)


@pytest.mark.parametrize(
    "app",
    [
        AppDef("a", [Role("r", image="i", entrypoint="e", metadata={"x": float("inf")})]),
        AppDef("a", [Role("r", image="i", entrypoint="e", metadata={"x": {1, 2}})]),
        AppDef("a", [Role("r", image="i", entrypoint="e", args=("x",))]),  # type: ignore[arg-type]
        AppDef("a", [Role("r", image="i", entrypoint="e", retry_policy="REPLICA")]),  # type: ignore[arg-type]
    ],
)
def test_unusual_values_are_written_by_the_serializer(app: AppDef) -> None:
    try:
        expected: str | type[BaseException] = dumps_json(app)
    except SerializationError:
        expected = SerializationError
    if isinstance(expected, str):
        assert encode(app) == expected
    else:
        with pytest.raises(expected):
            encode(app)


def test_a_role_subclass_is_written_as_a_role() -> None:
    class MyRole(Role):
        pass

    app = AppDef("a", [MyRole("r", image="i", entrypoint="e")])
    assert encode(app) == dumps_json(app)
    assert decode(encode(app)) == AppDef("a", [Role("r", image="i", entrypoint="e")])


@pytest.mark.parametrize(
    "obj",
    [
        _rich(),
        _rich().roles[0],
        _rich().roles[0].resource,
        *_rich().roles[0].mounts,
        Workspace({".": ""}),
        AppStatus(
            AppState.RUNNING,
            roles=[RoleStatus("r", [ReplicaStatus(0, AppState.RUNNING, "r", "h")])],
        ),
    ],
    ids=lambda o: type(o).__name__,
)
def test_the_fast_path_knows_every_field_of_the_specs(obj: Any) -> None:
    """Derived from the attrs fields: a field added to a spec is written and read without a
    change to the codec (the spec types use only the kinds of field it derives)."""
    data = _plain.unstructure(obj)
    names = [a.name for a in attrs.fields(type(obj))]
    assert [k for k in data if k != "type"] == names
    assert _plain.structure(data, type(obj)) == obj


def test_the_fast_path_declines_what_it_does_not_read_exactly() -> None:
    data = _plain.unstructure(_rich())
    for change in (
        lambda d: d["roles"][0].pop("overrides"),  # a default to fill in
        lambda d: d["roles"][0].update(extra=1),  # a key it does not know
        lambda d: d["roles"][0].update(num_replicas=True),  # bool is not int
        lambda d: d["roles"][0]["mounts"][0].update(type="tmpfs"),
        lambda d: d["roles"][0]["metadata"].update(x=float("nan")),
    ):
        bad = json.loads(json.dumps(data))
        change(bad)
        with pytest.raises(Exception):  # noqa: B017 - Decline, or Invalid inside a JSON value
            _plain.structure(bad, AppDef)
    with pytest.raises(_plain.Decline):
        _plain.unstructure(AppDef("a", [Role("r", image="i", args=("x",))]))  # type: ignore[arg-type]


def test_neither_way_imports_cattrs() -> None:
    code = (
        "import sys\n"
        "from torchx.specs import AppDef, Role, Resource\n"
        "from torchx.specs.appdef_json import decode, encode\n"
        "app = AppDef('a', [Role('r', image='i', entrypoint='e', resource=Resource(1, 0, 64))])\n"
        "assert decode(encode(app)) == app\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'cattrs'"
        " or m == 'torchx.specs._converter'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_threads_deriving_at_once_all_get_the_fast_path() -> None:
    """No thread sees a class another is deriving as declined (which would stick)."""
    code = (
        "import sys, threading\n"
        "from torchx.specs import AppDef, Role, _plain\n"
        "app = AppDef('a', [Role('r', image='i', entrypoint='e')])\n"
        "start, out = threading.Barrier(8), []\n"
        "def go():\n"
        "    start.wait()\n"
        "    try:\n"
        "        out.append(_plain.structure(_plain.unstructure(app), AppDef) == app)\n"
        "    except _plain.Decline:\n"
        "        out.append(False)\n"
        "threads = [threading.Thread(target=go) for _ in range(8)]\n"
        "[t.start() for t in threads]; [t.join() for t in threads]\n"
        "print(out.count(True))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "8"


# -- the run options kept with the AppDef ----------------------------------------------------

_names = st.text("abcdefgh_", min_size=1, max_size=8)  # never secret-looking
_option_values = (
    _text | st.integers() | st.booleans() | st.floats(allow_nan=False, allow_infinity=False)
)
_plain_options = st.dictionaries(
    _names,
    _option_values | st.lists(_names, max_size=3) | st.dictionaries(_names, _text, max_size=3),
    max_size=4,
)


@_settings
@given(app=_appdefs, options=_plain_options)
def test_run_options_round_trip_beside_the_appdef(app: AppDef, options: dict[str, Any]) -> None:
    from torchx.specs.appdef_json import RUN_OPTIONS_KEY, decode_with_options

    text = encode(app, run_options=options)
    back, got = decode_with_options(text)
    assert back == app
    assert decode(text) == app
    assert got == options and list(got) == sorted(got)
    # an older reader (the serializer alone) reads the same AppDef, one metadata entry more
    old = loads_json(text, AppDef)
    assert json.loads(old.metadata.pop(RUN_OPTIONS_KEY)) == options
    assert old == app


def test_secret_looking_run_options_are_masked_before_they_are_written() -> None:
    from torchx.specs.appdef_json import decode_with_options

    options = {
        "api_token": "tok-123",
        "env": {"HF_TOKEN": "hf-456", "LR": "0.1"},
        "copy_env": ["DB_PASSWORD=pw-789", "HF_*"],
        "mounts": "type=bind,MY_SECRET=sec-000",
        "queue": "gpu",
        "unset": None,
    }
    text = encode(_rich(), run_options=options)
    for secret in ("tok-123", "hf-456", "pw-789", "sec-000"):
        assert secret not in text
    assert decode_with_options(text)[1] == {
        "api_token": "****",
        "copy_env": ["DB_PASSWORD=****", "HF_*"],
        "env": {"HF_TOKEN": "****", "LR": "0.1"},
        "mounts": "type=bind,MY_SECRET=****",
        "queue": "gpu",
    }


def test_a_document_without_run_options_reads_as_before() -> None:
    from torchx.specs.appdef_json import RUN_OPTIONS_KEY, decode_with_options

    app = _rich()
    assert decode_with_options(dumps_json(app)) == (app, {})
    assert encode(app) == dumps_json(app)  # no run options given: the document is unchanged
    # the key is reserved: an app's own entry of that name is not written
    own = attrs.evolve(app, metadata={**app.metadata, RUN_OPTIONS_KEY: "mine"})
    assert decode(encode(own)) == app


@pytest.mark.parametrize("entry", ["not json", "[1, 2]", '{"a": {"b": 1}}', '{"a": [1]}', "null"])
def test_a_run_options_entry_that_is_not_plain_reads_as_none(entry: str) -> None:
    from torchx.specs.appdef_json import RUN_OPTIONS_KEY, decode_with_options

    app = _rich()
    kept = attrs.evolve(app, metadata={**app.metadata, RUN_OPTIONS_KEY: entry})
    assert decode_with_options(dumps_json(kept)) == (app, {})

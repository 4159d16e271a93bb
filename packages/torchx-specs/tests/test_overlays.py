"""Tests for torchx.specs.overlays: operators, accumulation, storage, files, validation."""

from __future__ import annotations

import copy
import json
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from torchx.specs import AppDef, Role
from torchx.specs.errors import SpecError
from torchx.specs.overlays import (
    DEL,
    JOIN,
    PUT,
    InvalidOverlayException,
    apply_overlay,
    get_overlay,
    set_overlay,
    validate_overlay,
)


def _role() -> Role:
    return Role(name="trainer", image="img", entrypoint="train.py")


# ------------------------------------------------------------------ operator keys


def test_operator_keys_are_plain_json_safe_strings() -> None:
    assert PUT("containers") == "PUT(containers)"
    assert DEL("hostNetwork") == "DEL(hostNetwork)"
    assert JOIN("containers", on="name") == "JOIN(containers, on=name)"
    overlay = {PUT("a"): [1], JOIN("b", on="k"): [{"k": 1}], DEL("c"): None}
    assert json.loads(json.dumps(overlay)) == overlay


@pytest.mark.parametrize(
    "make",
    [
        lambda: PUT(""),
        lambda: DEL(""),
        lambda: PUT(PUT("x")),
        lambda: JOIN("x", on=""),
        lambda: JOIN("x", on="a,b"),
        lambda: JOIN(DEL("x"), on="name"),
        lambda: PUT(3),  # type: ignore[arg-type]
    ],
)
def test_bad_operator_arguments_raise(make: Any) -> None:
    with pytest.raises(InvalidOverlayException):
        make()


def test_invalid_overlay_exception_is_a_spec_error() -> None:
    assert issubclass(InvalidOverlayException, SpecError)
    assert issubclass(InvalidOverlayException, ValueError)


@pytest.mark.parametrize("key", ["PUT()", "DEL()", "JOIN(x)", "JOIN(, on=name)", "JOIN(x, on=)"])
def test_malformed_hand_written_operator_keys_raise(key: str) -> None:
    with pytest.raises(InvalidOverlayException, match="malformed operator key"):
        apply_overlay({}, {key: 1})


def test_operator_lookalikes_without_parens_are_plain_keys() -> None:
    base: dict[str, Any] = {}
    apply_overlay(base, {"PUT": 1, "DELETE(x": 2, "JOINED": 3})
    assert base == {"PUT": 1, "DELETE(x": 2, "JOINED": 3}


# ------------------------------------------------------------------ default merge


def test_default_rules_merge_append_overwrite() -> None:
    base: dict[str, Any] = {"spec": {"cpu": "500m", "n": {"a": 1}}, "tags": ["prod"], "x": 1}
    apply_overlay(base, {"spec": {"memory": "1Gi", "n": {"b": 2}}, "tags": ["gpu"], "x": 3})
    assert base == {
        "spec": {"cpu": "500m", "n": {"a": 1, "b": 2}, "memory": "1Gi"},
        "tags": ["prod", "gpu"],
        "x": 3,
    }


def test_type_mismatch_overwrites() -> None:
    base: dict[str, Any] = {"a": [1], "b": {"x": 1}, "c": "s"}
    apply_overlay(base, {"a": {"k": 1}, "b": [1], "c": {"d": 1}})
    assert base == {"a": {"k": 1}, "b": [1], "c": {"d": 1}}


def test_apply_copies_values_from_overlay() -> None:
    overlay: dict[str, Any] = {"spec": {"list": [{"a": 1}]}, "new": {"deep": [1]}}
    base: dict[str, Any] = {}
    apply_overlay(base, overlay)
    overlay["spec"]["list"][0]["a"] = 99
    overlay["new"]["deep"].append(2)
    assert base == {"spec": {"list": [{"a": 1}]}, "new": {"deep": [1]}}


def test_apply_does_not_mutate_overlay() -> None:
    overlay = {"spec": {PUT("c"): [1]}, JOIN("l", on="n"): [{"n": 1}], "plain": [1]}
    snapshot = copy.deepcopy(overlay)
    base: dict[str, Any] = {"l": [{"n": 1, "v": 0}], "plain": [0]}
    apply_overlay(base, overlay)
    assert overlay == snapshot


# ------------------------------------------------------------------ None vs DEL vs missing


def test_none_vs_del_vs_missing() -> None:
    base = {"set_null": "v", "delete": "v", "untouched": "v"}
    apply_overlay(base, {"set_null": None, DEL("delete"): None})
    assert base == {"set_null": None, "untouched": "v"}
    assert "delete" not in base


def test_del_of_absent_key_is_noop_and_value_ignored() -> None:
    base = {"a": 1}
    apply_overlay(base, {DEL("nope"): "whatever"})
    assert base == {"a": 1}


def test_nested_del() -> None:
    base = {"spec": {"hostNetwork": True, "x": 1}}
    apply_overlay(base, {"spec": {DEL("hostNetwork"): None}})
    assert base == {"spec": {"x": 1}}


# ------------------------------------------------------------------ PUT


def test_put_replaces_list_dict_and_primitive() -> None:
    base: dict[str, Any] = {"l": [1, 2], "d": {"a": 1, "b": 2}, "p": 1}
    apply_overlay(base, {PUT("l"): [3], PUT("d"): {"c": 3}, PUT("p"): 2})
    assert base == {"l": [3], "d": {"c": 3}, "p": 2}


def test_put_creates_missing_field_and_resolves_nested_operators() -> None:
    base: dict[str, Any] = {}
    apply_overlay(base, {PUT("spec"): {"a": 1, DEL("b"): None, PUT("c"): [1]}})
    assert base == {"spec": {"a": 1, "c": [1]}}


# ------------------------------------------------------------------ JOIN


def test_join_merges_matched_and_appends_unmatched() -> None:
    base = {"containers": [{"name": "main", "image": "v1", "env": [{"a": 1}]}, {"name": "x"}]}
    apply_overlay(
        base,
        {
            JOIN("containers", on="name"): [
                {"name": "main", "image": "v2", "env": [{"b": 2}]},
                {"name": "sidecar", "image": "proxy"},
            ]
        },
    )
    assert base == {
        "containers": [
            {"name": "main", "image": "v2", "env": [{"a": 1}, {"b": 2}]},
            {"name": "x"},
            {"name": "sidecar", "image": "proxy"},
        ]
    }


def test_join_items_may_use_operators() -> None:
    base = {"containers": [{"name": "main", "cpu": "1", "ports": [1, 2]}]}
    apply_overlay(
        base,
        {JOIN("containers", on="name"): [{"name": "main", DEL("cpu"): None, PUT("ports"): [3]}]},
    )
    assert base == {"containers": [{"name": "main", "ports": [3]}]}


def test_join_onto_missing_or_none_creates_list() -> None:
    base: dict[str, Any] = {"b": None}
    apply_overlay(base, {JOIN("a", on="n"): [{"n": 1}], JOIN("b", on="n"): [{"n": 2}]})
    assert base == {"a": [{"n": 1}], "b": [{"n": 2}]}


def test_join_base_items_without_key_are_never_matched() -> None:
    base = {"l": [{"other": 1}]}
    apply_overlay(base, {JOIN("l", on="n"): [{"n": 1}]})
    assert base == {"l": [{"other": 1}, {"n": 1}]}


def test_join_merges_into_every_matching_base_item() -> None:
    base = {"l": [{"n": 1}, {"n": 1}, {"n": 2}]}
    apply_overlay(base, {JOIN("l", on="n"): [{"n": 1, "v": True}]})
    assert base == {"l": [{"n": 1, "v": True}, {"n": 1, "v": True}, {"n": 2}]}


def test_join_with_non_dict_base_items_raises_type_error() -> None:
    with pytest.raises(TypeError, match=r"base item 1 is a str"):
        apply_overlay({"l": [{"n": 1}, "oops"]}, {JOIN("l", on="n"): [{"n": 1}]})


def test_join_onto_non_list_raises_type_error() -> None:
    with pytest.raises(TypeError, match="not a list"):
        apply_overlay({"l": {"n": 1}}, {JOIN("l", on="n"): [{"n": 1}]})


def test_join_item_missing_key_is_one_line_error() -> None:
    with pytest.raises(InvalidOverlayException) as info:
        apply_overlay({"spec": {"l": []}}, {"spec": {JOIN("l", on="name"): [{"image": "x"}]}})
    message = str(info.value)
    assert "\n" not in message
    assert "spec.l" in message and "'name'" in message and "item 0" in message


def test_join_value_not_a_list_is_rejected() -> None:
    with pytest.raises(InvalidOverlayException, match="needs a list of dicts"):
        apply_overlay({}, {JOIN("l", on="name"): {"name": "x"}})


def test_join_item_error_raised_early_by_set_overlay() -> None:
    role = _role()
    with pytest.raises(InvalidOverlayException, match="has no 'name' key"):
        set_overlay(role, "k8s", "V1Pod", {JOIN("containers", on="name"): [{"image": "x"}]})


# ------------------------------------------------------------------ bad overlays


@pytest.mark.parametrize("overlay", [None, [], "spec", 3])
def test_non_dict_overlay_is_rejected(overlay: Any) -> None:
    with pytest.raises(InvalidOverlayException, match="must be a dict"):
        apply_overlay({}, overlay)
    with pytest.raises(InvalidOverlayException, match="must be a dict"):
        set_overlay(_role(), "k8s", "V1Pod", overlay)


def test_non_string_key_is_rejected_with_path() -> None:
    with pytest.raises(InvalidOverlayException, match=r"got 1 at spec"):
        apply_overlay({}, {"spec": {1: "x"}})


def test_apply_onto_non_dict_base_is_type_error() -> None:
    with pytest.raises(TypeError):
        apply_overlay([], {})  # type: ignore[arg-type]


# ------------------------------------------------------------------ set/get + accumulation


def test_set_and_get_roundtrip_on_role_and_appdef() -> None:
    role = _role()
    app = AppDef(name="app", roles=[role])
    set_overlay(role, "kubernetes", "V1Pod", {"spec": {"a": 1}})
    set_overlay(app, "kubernetes", "V1Job", {"spec": {"b": 2}})
    assert role.metadata == {"kubernetes": {"V1Pod": {"spec": {"a": 1}}}}
    assert get_overlay(role, "kubernetes", "V1Pod") == {"spec": {"a": 1}}
    assert get_overlay(app, "kubernetes", "V1Job") == {"spec": {"b": 2}}


def test_get_overlay_absent_returns_empty() -> None:
    role = _role()
    assert get_overlay(role, "kubernetes", "V1Pod") == {}
    role.metadata["kubernetes"] = {}
    assert get_overlay(role, "kubernetes", "V1Pod") == {}


def test_get_overlay_returns_a_copy() -> None:
    role = _role()
    set_overlay(role, "k8s", "V1Pod", {"spec": {"a": [1]}})
    got = get_overlay(role, "k8s", "V1Pod")
    got["spec"]["a"].append(2)
    assert get_overlay(role, "k8s", "V1Pod") == {"spec": {"a": [1]}}


def test_set_overlay_copies_input() -> None:
    role = _role()
    overlay: dict[str, Any] = {"spec": {"a": [1]}}
    set_overlay(role, "k8s", "V1Pod", overlay)
    overlay["spec"]["a"].append(2)
    assert get_overlay(role, "k8s", "V1Pod") == {"spec": {"a": [1]}}


def test_set_overlay_kinds_and_namespaces_are_separate() -> None:
    role = _role()
    set_overlay(role, "k8s", "V1Pod", {"a": 1})
    set_overlay(role, "k8s", "V1Service", {"b": 2})
    set_overlay(role, "aws", "V1Pod", {"c": 3})
    assert get_overlay(role, "k8s", "V1Pod") == {"a": 1}
    assert get_overlay(role, "k8s", "V1Service") == {"b": 2}
    assert get_overlay(role, "aws", "V1Pod") == {"c": 3}


def test_accumulation_merges_dicts_appends_lists_overwrites_primitives() -> None:
    role = _role()
    set_overlay(role, "k8s", "V1Pod", {"spec": {"sel": {"a": "1"}, "tol": [1]}, "n": 1})
    set_overlay(role, "k8s", "V1Pod", {"spec": {"sel": {"b": "2"}, "tol": [2]}, "n": 2})
    assert get_overlay(role, "k8s", "V1Pod") == {
        "spec": {"sel": {"a": "1", "b": "2"}, "tol": [1, 2]},
        "n": 2,
    }


def test_accumulation_operator_replaces_earlier_entries_for_field() -> None:
    role = _role()
    set_overlay(role, "k8s", "V1Pod", {"tags": ["a"], "other": 1})
    set_overlay(role, "k8s", "V1Pod", {PUT("tags"): ["b"]})
    set_overlay(role, "k8s", "V1Pod", {DEL("tags"): None})
    set_overlay(role, "k8s", "V1Pod", {PUT("tags"): ["c"]})
    stored = get_overlay(role, "k8s", "V1Pod")
    assert stored == {"other": 1, PUT("tags"): ["c"]}
    base = {"tags": ["base"]}
    apply_overlay(base, stored)
    assert base == {"tags": ["c"], "other": 1}


def test_accumulation_join_last_call_wins() -> None:
    role = _role()
    set_overlay(role, "k8s", "V1Pod", {JOIN("c", on="name"): [{"name": "a", "v": 1}]})
    set_overlay(role, "k8s", "V1Pod", {JOIN("c", on="name"): [{"name": "b", "v": 2}]})
    stored = get_overlay(role, "k8s", "V1Pod")
    assert stored == {JOIN("c", on="name"): [{"name": "b", "v": 2}]}


def test_accumulation_join_on_different_key_replaces_too() -> None:
    role = _role()
    set_overlay(role, "k8s", "V1Pod", {JOIN("c", on="name"): [{"name": "a"}]})
    set_overlay(role, "k8s", "V1Pod", {JOIN("c", on="id"): [{"id": 1}]})
    assert get_overlay(role, "k8s", "V1Pod") == {JOIN("c", on="id"): [{"id": 1}]}


def test_accumulation_plain_key_after_operator_applies_on_top() -> None:
    role = _role()
    set_overlay(role, "k8s", "V1Pod", {PUT("tags"): ["a"], DEL("spec"): None})
    set_overlay(role, "k8s", "V1Pod", {"tags": ["b"], "spec": {"x": 1}})
    base = {"tags": ["base"], "spec": {"old": True}}
    apply_overlay(base, get_overlay(role, "k8s", "V1Pod"))
    assert base == {"tags": ["a", "b"], "spec": {"x": 1}}


def test_accumulation_nested_operators() -> None:
    role = _role()
    set_overlay(role, "k8s", "V1Pod", {"spec": {"containers": [{"name": "x"}]}})
    set_overlay(role, "k8s", "V1Pod", {"spec": {PUT("containers"): [{"name": "only"}]}})
    set_overlay(
        role,
        "k8s",
        "V1Pod",
        {"spec": {JOIN("initContainers", on="name"): [{"name": "setup", "image": "v2"}]}},
    )
    set_overlay(role, "k8s", "V1Pod", {DEL("hostNetwork"): None})
    base: dict[str, Any] = {
        "hostNetwork": True,
        "spec": {
            "containers": [{"name": "a"}, {"name": "b"}],
            "initContainers": [{"name": "setup", "image": "v1", "cmd": "x"}],
        },
    }
    apply_overlay(base, get_overlay(role, "k8s", "V1Pod"))
    assert base == {
        "spec": {
            "containers": [{"name": "only"}],
            "initContainers": [{"name": "setup", "image": "v2", "cmd": "x"}],
        }
    }


def test_set_overlay_on_file_reference_raises() -> None:
    role = _role()
    role.metadata["k8s"] = "/some/file.yaml"
    with pytest.raises(InvalidOverlayException, match="file"):
        set_overlay(role, "k8s", "V1Pod", {"a": 1})


def test_set_overlay_on_non_dict_namespace_raises() -> None:
    role = _role()
    role.metadata["k8s"] = 3
    with pytest.raises(InvalidOverlayException, match="not a dict"):
        set_overlay(role, "k8s", "V1Pod", {"a": 1})


def test_get_overlay_backwards_compat_flat_namespace_warns() -> None:
    role = _role()
    role.metadata["k8s"] = {"spec": {"a": 1}}
    with pytest.warns(DeprecationWarning, match="set_overlay"):
        got = get_overlay(role, "k8s", "V1Pod")
    assert got == {"spec": {"a": 1}}


def test_get_overlay_with_kind_does_not_warn() -> None:
    role = _role()
    set_overlay(role, "k8s", "V1Pod", {"a": 1})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert get_overlay(role, "k8s", "V1Pod") == {"a": 1}


# ------------------------------------------------------------------ file-backed overlays


def test_get_overlay_from_json_file(tmp_path: Path) -> None:
    path = tmp_path / "overlay.json"
    path.write_text(json.dumps({"V1Pod": {"spec": {"a": 1}, "PUT(tags)": ["x"]}}))
    role = _role()
    role.metadata["k8s"] = str(path)
    overlay = get_overlay(role, "k8s", "V1Pod")
    assert overlay == {"spec": {"a": 1}, PUT("tags"): ["x"]}
    base = {"tags": ["old"]}
    apply_overlay(base, overlay)
    assert base == {"tags": ["x"], "spec": {"a": 1}}


def test_get_overlay_from_yaml_file_with_operators(tmp_path: Path) -> None:
    path = tmp_path / "overlay.yaml"
    path.write_text(
        "V1Pod:\n"
        "  spec:\n"
        "    nodeSelector:\n"
        "      accelerator: a100\n"
        "    JOIN(containers, on=name):\n"
        "      - name: main\n"
        "        memory: 1Gi\n"
        "  DEL(hostNetwork): null\n"
    )
    role = _role()
    role.metadata["k8s"] = f"file://{path}"
    overlay = get_overlay(role, "k8s", "V1Pod")
    base = {"hostNetwork": True, "spec": {"containers": [{"name": "main", "image": "v1"}]}}
    apply_overlay(base, overlay)
    assert base == {
        "spec": {
            "containers": [{"name": "main", "image": "v1", "memory": "1Gi"}],
            "nodeSelector": {"accelerator": "a100"},
        }
    }


def test_get_overlay_yaml_file_flat_is_backwards_compatible(tmp_path: Path) -> None:
    path = tmp_path / "flat.yml"
    path.write_text("spec:\n  a: 1\n")
    role = _role()
    role.metadata["k8s"] = str(path)
    with pytest.warns(DeprecationWarning):
        assert get_overlay(role, "k8s", "V1Pod") == {"spec": {"a": 1}}


def test_get_overlay_missing_file_is_one_line_error(tmp_path: Path) -> None:
    role = _role()
    role.metadata["k8s"] = str(tmp_path / "nope.yaml")
    with pytest.raises(InvalidOverlayException, match="cannot read overlay file") as info:
        get_overlay(role, "k8s", "V1Pod")
    assert "\n" not in str(info.value)


def test_get_overlay_bad_json_and_yaml(tmp_path: Path) -> None:
    role = _role()
    (tmp_path / "bad.json").write_text("{not json")
    role.metadata["k8s"] = str(tmp_path / "bad.json")
    with pytest.raises(InvalidOverlayException, match="not valid JSON"):
        get_overlay(role, "k8s", "V1Pod")
    (tmp_path / "bad.yaml").write_text("a: [1,\n b")
    role.metadata["k8s"] = str(tmp_path / "bad.yaml")
    with pytest.raises(InvalidOverlayException, match="not valid YAML") as info:
        get_overlay(role, "k8s", "V1Pod")
    assert "\n" not in str(info.value)


def test_get_overlay_file_not_a_mapping(tmp_path: Path) -> None:
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n")
    role = _role()
    role.metadata["k8s"] = str(tmp_path / "list.yaml")
    with pytest.raises(InvalidOverlayException, match="expected a dict"):
        get_overlay(role, "k8s", "V1Pod")


def test_get_overlay_remote_uri_without_fsspec(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "fsspec", None)  # makes `import fsspec` fail
    role = _role()
    role.metadata["k8s"] = "s3://bucket/overlay.yaml"
    with pytest.raises(InvalidOverlayException, match="needs fsspec"):
        get_overlay(role, "k8s", "V1Pod")


def test_get_overlay_non_dict_kind_value() -> None:
    role = _role()
    role.metadata["k8s"] = {"V1Pod": [1]}
    with pytest.raises(InvalidOverlayException, match="must be a dict"):
        get_overlay(role, "k8s", "V1Pod")


# ------------------------------------------------------------------ validate_overlay


def test_validate_overlay_accepts_clean_overlay() -> None:
    validate_overlay({"nodeSelector": {}}, blocklist=["env"], forbidden_keys={"replicas"})


def test_validate_overlay_blocklist_names_keys() -> None:
    with pytest.raises(InvalidOverlayException) as info:
        validate_overlay(
            {"env": {}, "command": [], "ok": 1},
            blocklist=["env", "command"],
            overlay_name="PodSpec",
        )
    message = str(info.value)
    assert "'command', 'env'" in message and "PodSpec" in message and "'ok'" not in message
    assert "\n" not in message


def test_validate_overlay_resolves_operator_keys() -> None:
    for key in (PUT("env"), DEL("env"), JOIN("env", on="name")):
        with pytest.raises(ValueError, match="'env'"):
            validate_overlay({key: []}, blocklist=["env"])
        with pytest.raises(ValueError, match="'env'"):
            validate_overlay({key: []}, forbidden_keys={"env"})


def test_validate_overlay_forbidden_keys_with_suggestion() -> None:
    with pytest.raises(InvalidOverlayException) as info:
        validate_overlay(
            {"replicas": 3},
            forbidden_keys={"replicas"},
            overlay_name="PodSpec",
            suggestion="put it in the V1Job overlay",
        )
    message = str(info.value)
    assert "'replicas'" in message
    assert "different overlay type" in message
    assert message.endswith("put it in the V1Job overlay")


def test_validate_overlay_reports_both_problems() -> None:
    with pytest.raises(InvalidOverlayException) as info:
        validate_overlay({"env": 1, "replicas": 2}, blocklist=["env"], forbidden_keys={"replicas"})
    assert "'env'" in str(info.value) and "'replicas'" in str(info.value)


def test_validate_overlay_rejects_non_dict() -> None:
    with pytest.raises(InvalidOverlayException, match="must be a dict"):
        validate_overlay([], overlay_name="PodSpec")  # type: ignore[arg-type]


# ------------------------------------------------------------------ properties

_keys = st.text(alphabet="abcdefgh", min_size=1, max_size=3)
_primitives = st.none() | st.booleans() | st.integers() | st.text(max_size=5)
_values = st.recursive(
    _primitives,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(_keys, children, max_size=3),
    max_leaves=12,
)
_overlays = st.dictionaries(_keys, _values, max_size=4)


def _deep_merge(a: Any, b: Any) -> Any:
    """Independent reference merge: dicts merge, lists concatenate, else b wins."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = dict(a)
        for k, v in b.items():
            out[k] = _deep_merge(a[k], v) if k in a else copy.deepcopy(v)
        return out
    if isinstance(a, list) and isinstance(b, list):
        return copy.deepcopy(a) + copy.deepcopy(b)
    return copy.deepcopy(b)


@settings(max_examples=200, deadline=None)
@given(_overlays, _overlays)
def test_apply_operator_free_overlays_equals_deep_merge(
    first: dict[str, Any], second: dict[str, Any]
) -> None:
    base: dict[str, Any] = {}
    apply_overlay(base, first)
    assert base == first
    apply_overlay(base, second)
    assert base == _deep_merge(first, second)


@settings(max_examples=200, deadline=None)
@given(_overlays, st.lists(_overlays, max_size=4))
def test_accumulated_overlay_equals_sequential_application(
    base: dict[str, Any], overlays: list[dict[str, Any]]
) -> None:
    role = _role()
    sequential = copy.deepcopy(base)
    for overlay in overlays:
        set_overlay(role, "ns", "Kind", overlay)
        apply_overlay(sequential, overlay)
    accumulated = copy.deepcopy(base)
    apply_overlay(accumulated, get_overlay(role, "ns", "Kind"))
    assert accumulated == sequential


_op_keys = st.one_of(_keys, _keys.map(PUT), _keys.map(DEL))
_op_values = st.recursive(
    _primitives,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(_op_keys, children, max_size=3)
    ),
    max_leaves=12,
)
_op_overlays = st.dictionaries(_op_keys, _op_values, max_size=4)


@settings(max_examples=200, deadline=None)
@given(_overlays, st.lists(_op_overlays, max_size=4))
def test_accumulation_with_put_and_del_equals_sequential_application(
    base: dict[str, Any], overlays: list[dict[str, Any]]
) -> None:
    role = _role()
    sequential = copy.deepcopy(base)
    for overlay in overlays:
        set_overlay(role, "ns", "Kind", overlay)
        apply_overlay(sequential, overlay)
    accumulated = copy.deepcopy(base)
    apply_overlay(accumulated, get_overlay(role, "ns", "Kind"))
    assert accumulated == sequential


def test_get_overlay_remote_uri_goes_through_fsspec(monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import types

    opened: list[str] = []

    def fake_open(uri: str, mode: str = "r", **kwargs: Any) -> io.StringIO:
        opened.append(uri)
        return io.StringIO('{"V1Pod": {"spec": {"a": 1}}}')

    fake = types.ModuleType("fsspec")
    fake.open = fake_open  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fsspec", fake)
    role = _role()
    role.metadata["k8s"] = "s3://bucket/overlay.json"
    assert get_overlay(role, "k8s", "V1Pod") == {"spec": {"a": 1}}
    assert opened == ["s3://bucket/overlay.json"]


def test_accumulating_container_over_other_type_becomes_put() -> None:
    role = _role()
    set_overlay(role, "k8s", "V1Pod", {"a": None, "b": {"x": 1}, "c": [1]})
    set_overlay(role, "k8s", "V1Pod", {"a": [1], "b": [2], "c": {"y": 2}})
    stored = get_overlay(role, "k8s", "V1Pod")
    assert stored == {PUT("a"): [1], PUT("b"): [2], PUT("c"): {"y": 2}}
    base: dict[str, Any] = {"a": [0], "b": {"z": 0}, "c": [0]}
    apply_overlay(base, stored)
    assert base == {"a": [1], "b": [2], "c": {"y": 2}}

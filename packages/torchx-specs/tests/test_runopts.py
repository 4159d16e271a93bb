"""runopts, runopt.cast_to_type and cfg_from_str: the documented rules and bad input."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from torchx.specs import InvalidRunConfigException, SpecError, runopt, runopts


@pytest.fixture
def opts() -> runopts:
    o = runopts()
    o.add("FOO", type_=list[str], default=["a"], help="an optional list option")
    o.add("BAR", type_=str, required=True, help="a required str option")
    return o


@pytest.mark.parametrize(
    "text, expected",
    [
        ("", {}),
        ("UNKNOWN=VALUE", {}),
        ("FOO=v1", {"FOO": ["v1"]}),
        ("FOO=v1,v2", {"FOO": ["v1", "v2"]}),
        ("FOO=v1;v2", {"FOO": ["v1", "v2"]}),
        ("FOO=v1,v2,BAR=v3", {"FOO": ["v1", "v2"], "BAR": "v3"}),
        ("FOO=v1;v2,BAR=v3", {"FOO": ["v1", "v2"], "BAR": "v3"}),
        ("FOO=v1;v2;BAR=v3", {"FOO": ["v1", "v2"], "BAR": "v3"}),
        ("BAR=a=b", {"BAR": "a=b"}),
        ("  BAR = x ", {"BAR": "x"}),
    ],
)
def test_cfg_from_str_documented_rules(
    opts: runopts, text: str, expected: dict[str, object]
) -> None:
    assert opts.cfg_from_str(text) == expected


def test_documented_single_item_list() -> None:
    # the reference shows "FOO=v1" -> {"FOO": "v1"} in prose; a list option always gives a list
    o = runopts()
    o.add("FOO", type_=list[str], help="x")
    assert o.cfg_from_str("FOO=v1") == {"FOO": ["v1"]}


def test_strict_rejects_unknown_with_nearest(opts: runopts) -> None:
    with pytest.raises(
        InvalidRunConfigException, match=r"unknown run option 'BAZ'.*did you mean 'BAR'"
    ):
        opts.cfg_from_str("BAZ=1", strict=True)


def test_malformed_cfg_string(opts: runopts) -> None:
    with pytest.raises(InvalidRunConfigException, match="is not KEY=VALUE"):
        opts.cfg_from_str("justavalue")
    with pytest.raises(InvalidRunConfigException, match="is not KEY=VALUE"):
        opts.cfg_from_str(",BAR=x")


@pytest.mark.parametrize("value", ["true", "TRUE", "1", "yes", "On", "y"])
def test_bool_true(value: str) -> None:
    assert runopt(None, bool, False, "b").cast_to_type(value) is True


@pytest.mark.parametrize("value", ["false", "False", "0", "NO", "off"])
def test_bool_false(value: str) -> None:
    assert runopt(None, bool, False, "b").cast_to_type(value) is False


@pytest.mark.parametrize("value", ["", "2", "maybe", "truee"])
def test_bool_rejects(value: str) -> None:
    with pytest.raises(InvalidRunConfigException, match="expects a bool"):
        runopt(None, bool, False, "b").cast_to_type(value)


def test_cast_numbers_and_collections() -> None:
    assert runopt(None, int, False, "n").cast_to_type(" 7 ") == 7
    assert runopt(None, float, False, "f").cast_to_type("1.5") == 1.5
    assert runopt(None, list[str], False, "l").cast_to_type("a;b") == ["a", "b"]
    assert runopt(None, dict[str, str], False, "d").cast_to_type("a:1,b:2") == {"a": "1", "b": "2"}
    assert runopt(None, dict[str, str], False, "d").cast_to_type("") == {}
    with pytest.raises(InvalidRunConfigException, match="expects an int"):
        runopt(None, int, False, "n").cast_to_type("seven")
    with pytest.raises(InvalidRunConfigException, match="KEY:VALUE"):
        runopt(None, dict[str, str], False, "d").cast_to_type("a=1")


def test_resolve_fills_defaults_and_accepts_camel_case() -> None:
    o = runopts()
    o.add("cluster_name", type_=str, help="c", required=True)
    o.add("retries", type_=int, default=2, help="r", aliases=["n_retries"])
    o.add("ratio", type_=float, default=0.5, help="x")
    cfg = {"clusterName": "prod", "n_retries": 4, "ratio": 1, "extra": "kept"}
    resolved = o.resolve(cfg)
    assert resolved == {"cluster_name": "prod", "retries": 4, "ratio": 1.0, "extra": "kept"}
    assert isinstance(resolved["ratio"], float)
    assert cfg == {"clusterName": "prod", "n_retries": 4, "ratio": 1, "extra": "kept"}  # untouched
    assert o.get("clusterName") is o.get("cluster_name") is not None


def test_resolve_errors() -> None:
    o = runopts()
    o.add("n", type_=int, help="count", required=True)
    with pytest.raises(InvalidRunConfigException, match="required run option 'n'"):
        o.resolve({})
    with pytest.raises(InvalidRunConfigException, match="expects int, got True"):
        o.resolve({"n": True})
    with pytest.raises(InvalidRunConfigException, match="unknown run option 'x'"):
        o.resolve({"n": 1, "x": 2}, strict=True)


def test_default_copies_are_independent() -> None:
    o = runopts()
    o.add("tags", type_=list[str], default=["a"], help="t")
    first = o.resolve({})
    first["tags"].append("b")  # type: ignore[union-attr]
    assert o.resolve({}) == {"tags": ["a"]}


def test_add_rejects_bad_declarations() -> None:
    o = runopts()
    with pytest.raises(ValueError, match="must not have a default"):
        o.add("x", type_=int, help="", default=1, required=True)
    with pytest.raises(TypeError, match="not of type int"):
        o.add("y", type_=int, help="", default="1")
    with pytest.raises(ValueError, match="unsupported type"):
        o.add("z", type_=set, help="")


def test_update_merge_and_repr() -> None:
    a, b = runopts(), runopts()
    a.add("x", type_=int, default=1, help="ex")
    b.add("y", type_=str, help="why", required=True)
    merged = a | b
    assert [name for name, _ in merged] == ["x", "y"] and len(a) == 1
    text = repr(merged)
    assert "x" in text and "(default: 1)" in text and "(required)" in text and "why" in text


def test_is_type() -> None:
    assert runopts.is_type(["a"], list[str]) and not runopts.is_type(["a", 1], list[str])
    assert runopts.is_type({"a": "b"}, dict[str, str]) and not runopts.is_type(
        {"a": 1}, dict[str, str]
    )
    assert runopts.is_type(1, float) and not runopts.is_type(True, int)


def test_cfg_from_json_repr() -> None:
    o = runopts()
    o.add("n", type_=int, help="n")
    o.add("tags", type_=list[str], help="t")
    assert o.cfg_from_json_repr('{"n": 2, "tags": "a,b"}') == {"n": 2, "tags": ["a", "b"]}
    with pytest.raises(InvalidRunConfigException, match="not valid JSON"):
        o.cfg_from_json_repr("{")
    with pytest.raises(InvalidRunConfigException, match="must be an object"):
        o.cfg_from_json_repr("[1]")


# -- properties --------------------------------------------------------------------------

_word = st.text(
    alphabet=st.characters(
        blacklist_characters=",;=:", blacklist_categories=("Cs", "Cc", "Zs", "Zl", "Zp")
    ),
    min_size=1,
    max_size=8,
)
_TYPES = {"s": str, "i": int, "f": float, "b": bool, "l": list[str], "d": dict[str, str]}


def _schema() -> runopts:
    o = runopts()
    for key, tp in _TYPES.items():
        o.add(f"opt_{key}", type_=tp, help=key)
    return o


@st.composite
def cfgs(draw: st.DrawFn) -> dict[str, object]:
    values = {
        "opt_s": _word,
        "opt_i": st.integers(-(10**9), 10**9),
        "opt_f": st.floats(allow_nan=False, allow_infinity=False, width=32),
        "opt_b": st.booleans(),
        "opt_l": st.lists(_word, max_size=4),
        "opt_d": st.dictionaries(_word, _word, max_size=3),
    }
    keys = draw(st.lists(st.sampled_from(sorted(values)), unique=True))
    return {k: draw(values[k]) for k in keys}


@given(cfgs())
def test_cfg_from_str_round_trips_a_rendered_cfg(cfg: dict[str, object]) -> None:
    o = _schema()
    assert o.cfg_from_str(o.cfg_to_str(cfg)) == cfg  # type: ignore[arg-type]


@given(st.text(max_size=40))
def test_cfg_from_str_only_raises_its_own_error(text: str) -> None:
    o = _schema()
    try:
        o.cfg_from_str(text)
    except SpecError as e:
        assert "\n" not in str(e)

"""The grid and random expansion of ``torchx.sweeps`` (``--grid NAME=V1,V2``, ``--random N``)."""

from __future__ import annotations

import math
import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from torchx.sweeps import SweepError, expand, parse_grid

names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,10}", fullmatch=True)
value = st.text(alphabet=string.ascii_letters + string.digits + "-+._e/=:", min_size=1, max_size=8)
values = st.lists(value, min_size=1, max_size=5, unique=True)


@given(names, values)
def test_a_grid_is_its_name_and_its_values_as_typed(name: str, vals: list[str]) -> None:
    assert parse_grid(f"{name}={','.join(vals)}") == (name, vals)
    assert parse_grid(f" {name} = {' , '.join(vals)} ") == (name, vals)


def test_the_documented_forms() -> None:
    assert parse_grid("lr=1e-3,1e-4") == ("lr", ["1e-3", "1e-4"])
    assert parse_grid("batch=32") == ("batch", ["32"])
    assert parse_grid("opt=k=v,x") == ("opt", ["k=v", "x"])  # only the first = splits


@given(
    st.one_of(
        names,  # no =
        names.map(lambda n: n + "="),  # no value
        st.tuples(names, values).map(lambda t: f"{t[0]}={','.join(t[1])},"),  # empty last
        st.tuples(names, values).map(lambda t: f"{t[0]}=,{','.join(t[1])}"),  # empty first
        st.tuples(names, value).map(lambda t: f"{t[0]}={t[1]},{t[1]}"),  # twice
        st.tuples(st.from_regex(r"[0-9-][A-Za-z0-9]{0,5}", fullmatch=True), values).map(
            lambda t: f"{t[0]}={','.join(t[1])}"
        ),  # not an identifier
    )
)
def test_bad_forms_are_refused_in_one_line_quoting_them(text: str) -> None:
    with pytest.raises(SweepError) as e:
        parse_grid(text)
    assert "\n" not in str(e.value) and repr(text) in str(e.value)


grids = st.lists(st.tuples(names, values), min_size=1, max_size=3, unique_by=lambda g: g[0])


@given(grids)
def test_the_trials_are_the_cartesian_product_in_order(gs: list[tuple[str, list[str]]]) -> None:
    trials = expand(gs)
    assert len(trials) == math.prod(len(v) for _, v in gs)
    assert len({tuple(t.items()) for t in trials}) == len(trials)
    assert all(list(t) == [n for n, _ in gs] for t in trials)
    assert trials[0] == {n: v[0] for n, v in gs}
    assert trials[-1] == {n: v[-1] for n, v in gs}


@given(grids, st.data(), st.integers(0, 2**32))
def test_random_n_samples_n_distinct_trials_the_same_for_a_seed(
    gs: list[tuple[str, list[str]]], data: st.DataObject, seed: int
) -> None:
    everything = expand(gs)
    n = data.draw(st.integers(1, len(everything)))
    picked = expand(gs, n, seed)
    assert len(picked) == n
    assert all(t in everything for t in picked)
    assert len({tuple(t.items()) for t in picked}) == n
    assert picked == expand(gs, n, seed)
    assert picked == [t for t in everything if t in picked]  # in the grid's order


def test_bad_expansions_are_refused_in_one_line() -> None:
    g = [("a", ["1", "2"])]
    for grids_, n, seed, word in [
        ([], None, None, "nothing to sweep"),
        ([*g, ("a", ["3"])], None, None, "given twice"),
        (g, 3, 1, "only 2 trials"),
        (g, 0, 1, "1 or more"),
        (g, None, 7, "--seed is for --random"),
    ]:
        with pytest.raises(SweepError, match=word) as e:
            expand(grids_, n, seed)
        assert "\n" not in str(e.value)

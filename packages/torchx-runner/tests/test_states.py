"""torchx.schedulers.contract.states: the state map, the roll-up of replicas, cancels seen as failures."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from torchx.schedulers.contract.states import (
    replicas_in_app_state,
    rollup,
    settle_cancelled,
    to_app_state,
)
from torchx.specs import AppState

states = st.sampled_from(list(AppState))
tables = st.dictionaries(st.text(max_size=12), states, max_size=10)


@given(tables, st.text(max_size=12))
def test_an_unknown_backend_state_is_unknown_never_failed(table: dict, native: str) -> None:
    got = to_app_state(native, table)
    if native in table:
        assert got == table[native]
    else:
        assert got == AppState.UNKNOWN


@given(st.lists(states, min_size=1, max_size=20))
def test_rollup_rules(replicas: list[AppState]) -> None:
    got = rollup(replicas)
    present = set(replicas)
    # the partial-failure rule: one failed replica fails the app, whatever the others do
    assert (got == AppState.FAILED) == (AppState.FAILED in present)
    if AppState.FAILED not in present and AppState.CANCELLED in present:
        assert got == AppState.CANCELLED
    # terminal only when every replica is known to be done
    if got.is_terminal() and got != AppState.FAILED:
        assert got == AppState.CANCELLED or present == {AppState.SUCCEEDED}
    assert got == AppState.SUCCEEDED or present != {AppState.SUCCEEDED}
    # a replica still running keeps a not-failed, not-cancelled app running
    if AppState.RUNNING in present and not present & {AppState.FAILED, AppState.CANCELLED}:
        assert got == AppState.RUNNING
    # the app's state is one of its replicas' (RUNNING too, when some finished and others wait)
    assert got in present or got == AppState.RUNNING


@given(st.lists(states, min_size=1, max_size=20), st.randoms())
def test_rollup_ignores_order_and_repeats(replicas: list[AppState], rnd: object) -> None:
    shuffled = list(replicas)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    assert rollup(shuffled) == rollup(replicas) == rollup(set(replicas))


def test_rollup_examples() -> None:
    S, F, R, P, C, U = (
        AppState.SUCCEEDED,
        AppState.FAILED,
        AppState.RUNNING,
        AppState.PENDING,
        AppState.CANCELLED,
        AppState.UNKNOWN,
    )
    assert rollup([]) == U
    assert rollup([S, F, R]) == F
    assert rollup([S, P]) == R  # started, not ended
    assert rollup([S, U]) == U  # never guessed as succeeded
    assert rollup([R, U]) == R
    assert rollup([P, AppState.SUBMITTED]) == P
    assert rollup([C, S]) == C


@given(states, st.booleans())
def test_settle_cancelled(state: AppState, cancelled: bool) -> None:
    got = settle_cancelled(state, cancelled)
    if cancelled and state == AppState.FAILED:
        assert got == AppState.CANCELLED
    else:
        assert got == state


def test_replicas_in_app_state() -> None:
    roles = replicas_in_app_state({"trainer": 2, "ps": 1}, AppState.RUNNING)
    assert [(r.role, [(x.id, x.state, x.exit_code) for x in r.replicas]) for r in roles] == [
        ("trainer", [(0, AppState.RUNNING, None), (1, AppState.RUNNING, None)]),
        ("ps", [(0, AppState.RUNNING, None)]),
    ]

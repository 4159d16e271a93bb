"""App handles, mounts and workspaces: parsing, round trips and one-line errors."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from torchx.specs import (
    BindMount,
    DeviceMount,
    InvalidMountException,
    InvalidWorkspaceException,
    MalformedAppHandleException,
    ParsedAppHandle,
    VolumeMount,
    Workspace,
    make_app_handle,
    parse_app_handle,
    parse_mounts,
)
from torchx.specs.handles import parse_handle, parse_target


def test_parse_handle() -> None:
    assert parse_app_handle("k8s://me/team-a:trainer-x1") == ParsedAppHandle(
        "k8s", "me", "team-a:trainer-x1"
    )


@pytest.mark.parametrize(
    ("handle", "app_id"),
    [("local://me/app/with/slash", "app/with/slash"), ("sched://session/a/b", "a/b")],
)
def test_an_app_id_with_a_slash_is_refused_naming_it(handle: str, app_id: str) -> None:
    with pytest.raises(MalformedAppHandleException) as e:
        parse_app_handle(handle)
    message = str(e.value)
    assert "\n" not in message
    assert message.startswith(
        f"malformed app handle {handle!r}: its app id {app_id!r} contains '/'"
    )
    assert message.endswith(
        "expected {scheduler}://{session_name}/{app_id}, e.g. local://torchx/echo-k3x9q2m7bw"
    )
    with pytest.raises(MalformedAppHandleException, match="the session and the app id no '/'"):
        make_app_handle("local", "me", app_id)


@pytest.mark.parametrize(
    "bad", ["", "local", "local://", "local://sess", "local:/s/a", "://s/a", "a b://s/x"]
)
def test_malformed_handles(bad: str) -> None:
    with pytest.raises(MalformedAppHandleException, match=r"expected \{scheduler\}://"):
        parse_app_handle(bad)


def test_make_handle_rejects_unparseable_parts() -> None:
    with pytest.raises(MalformedAppHandleException):
        make_app_handle("k8s", "a/b", "x")
    with pytest.raises(MalformedAppHandleException):
        make_app_handle("k8s", "s", "")


_part = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc", "Zs", "Zl", "Zp")),
    min_size=1,
    max_size=12,
)


@given(
    _part.filter(lambda s: ":" not in s and "/" not in s),
    _part.filter(lambda s: "/" not in s) | st.just(""),
    _part.filter(lambda s: "/" not in s),
)
def test_handle_round_trip(scheduler: str, session: str, app_id: str) -> None:
    handle = make_app_handle(scheduler, session, app_id)
    assert parse_app_handle(handle) == (scheduler, session, app_id)


@given(
    _part.filter(lambda s: ":" not in s and "/" not in s),
    _part.filter(lambda s: "/" not in s) | st.just(""),
    _part.filter(lambda s: "/" not in s),
    _part,
)
def test_no_handle_carries_a_slash_in_its_app_id(
    scheduler: str, session: str, head: str, tail: str
) -> None:
    app_id = f"{head}/{tail}"
    with pytest.raises(MalformedAppHandleException):
        make_app_handle(scheduler, session, app_id)
    with pytest.raises(MalformedAppHandleException, match="contains '/'"):
        parse_app_handle(f"{scheduler}://{session}/{app_id}")


#: The grammar of a handle as a regular expression: the parser (plain string
#: operations, so that ``torchx status`` need not import ``re``) must agree with it.
_HANDLE_GRAMMAR = re.compile(r"(?P<scheduler>[^:/\s]+)://(?P<session>[^/\s]*)/(?P<app_id>[^/\s]+)")


@given(
    st.text(alphabet=st.sampled_from("ab:/ \t\u2003\x1c"), max_size=14)
    | st.from_regex(_HANDLE_GRAMMAR, fullmatch=True)
)
def test_the_parser_agrees_with_the_grammar(text: str) -> None:
    match = _HANDLE_GRAMMAR.fullmatch(text)
    try:
        got = parse_app_handle(text)
    except MalformedAppHandleException:
        assert match is None
    else:
        assert match is not None and got == match.group("scheduler", "session", "app_id")


def test_a_handle_is_parsed_once_and_carries_its_parts() -> None:
    handle = parse_handle("k8s://me/team-a:trainer-x1")
    assert handle == "k8s://me/team-a:trainer-x1" and isinstance(handle, str)
    assert (handle.scheduler_backend, handle.session_name, handle.app_id) == (
        "k8s",
        "me",
        "team-a:trainer-x1",
    )
    assert (handle.role, handle.replica_ids) == (None, None)
    assert parse_handle(handle) is handle  # passed down, not parsed again
    assert parse_app_handle(handle) == ParsedAppHandle("k8s", "me", "team-a:trainer-x1")


@pytest.mark.parametrize(
    ("text", "handle", "role", "ids"),
    [
        ("local://s/app", "local://s/app", None, None),
        ("local://s/app/", "local://s/app", None, None),
        ("local://s/app/trainer", "local://s/app", "trainer", None),
        ("local://s/app/trainer/", "local://s/app", "trainer", None),
        ("local://s/app/trainer/0,2", "local://s/app", "trainer", [0, 2]),
        ("local:///app//1", "local:///app", None, [1]),
    ],
)
def test_a_target_carries_its_role_and_replicas(
    text: str, handle: str, role: str | None, ids: list[int] | None
) -> None:
    got = parse_target(text)
    assert (got, got.role, got.replica_ids) == (handle, role, ids)
    assert got.parsed == parse_app_handle(handle)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("local://s", "bad handle 'local://s': expected HANDLE[/ROLE[/N,M]], HANDLE being "),
        ("local://s/app/r/x", "bad replica ids 'x' in 'local://s/app/r/x': expected numbers"),
        (
            "local://s/app/r/0/x",
            "bad handle 'local://s/app/r/0/x': expected HANDLE[/ROLE[/N,M]], "
            "e.g. local://s/app/r/0,1",
        ),
    ],
)
def test_a_bad_target_says_what_is_expected(text: str, message: str) -> None:
    with pytest.raises(MalformedAppHandleException) as e:
        parse_target(text)
    assert str(e.value).startswith(message)


def test_parse_mounts_all_kinds() -> None:
    mounts = parse_mounts(
        [
            "type=bind,src=/a,dst=/b,readonly",
            "type=volume,src=vol,dst=/v",
            "type=device,src=/dev/fuse,dst=/dev/f,perm=rw",
        ]
    )
    assert mounts == [
        BindMount("/a", "/b", True),
        VolumeMount("vol", "/v", False),
        DeviceMount("/dev/fuse", "/dev/f", "rw"),
    ]
    assert parse_mounts([]) == []


@pytest.mark.parametrize(
    "opts, message",
    [
        (["type=nfs,src=a,dst=b"], "unknown mount type 'nfs'"),
        (["type=bind,src=/a"], "missing 'dst'"),
        (["type=bind,dst=/a"], "missing 'src'"),
        (["type=bind,src=/a,dst=/b,perm=rw"], "unknown option 'perm=rw'"),
        (["type=device,src=/dev/x,perm=rwx"], "bad perm"),
        (["type=bind,src=/a,src=/c,dst=/b"], "given twice"),
        (["dst=/b"], "comes before 'type=...'"),
    ],
)
def test_parse_mounts_errors(opts: list[str], message: str) -> None:
    with pytest.raises(InvalidMountException, match=message):
        parse_mounts(opts)


_token = st.text(alphabet="type=bindvolumdecsrtp/,ado ", max_size=30)


@given(st.lists(_token | st.text(max_size=20), max_size=5))
def test_parse_mounts_never_raises_anything_else(opts: list[str]) -> None:
    try:
        parse_mounts(opts)
    except InvalidMountException as e:
        assert "\n" not in str(e)


def test_workspace(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "a.py").write_text("x = 1\n")
    ws = Workspace.from_str(f"{tmp_path / 'proj'}=lib")
    assert not ws.is_unmapped_single_project()
    ws.merge_into(tmp_path / "out")
    assert (tmp_path / "out" / "lib" / "a.py").read_text() == "x = 1\n"
    assert Workspace.from_str('{"a": "b"}').projects == {"a": "b"}
    for bad in ["", "=x", "a=1,a=2", "{bad json", '{"a": 1}']:
        with pytest.raises(InvalidWorkspaceException):
            Workspace.from_str(bad)
    with pytest.raises(InvalidWorkspaceException, match="does not exist"):
        Workspace({str(tmp_path / "missing"): ""}).merge_into(tmp_path / "o2")

"""The public pieces every scheduler shares: ids, follow_file, write_private_atomic, errors."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from torchx.schedulers.contract.errors import InvalidAppIdError, SchedulerError
from torchx.schedulers.helpers.files import write_private_atomic
from torchx.schedulers.helpers.follow import follow_file
from torchx.schedulers.helpers.ids import is_valid_app_id, make_app_id, validate_app_id

# -- ids ------------------------------------------------------------------------------------


@given(st.text(max_size=200))
def test_generated_app_ids_are_always_valid(name: str) -> None:
    app_id = make_app_id(name)
    assert is_valid_app_id(app_id) and validate_app_id(app_id) == app_id


def test_app_ids_are_distinct_and_keep_the_name() -> None:
    ids = {make_app_id("trainer") for _ in range(2000)}
    assert len(ids) == 2000
    assert all(i.startswith("trainer-") for i in ids)
    assert make_app_id("!!!").startswith("app-")


@pytest.mark.parametrize("bad", ["", "a/b", "../x", "a..b", "-a", "A", "a" * 101, None, 3])
def test_invalid_app_ids(bad: object) -> None:
    assert not is_valid_app_id(bad)
    with pytest.raises(InvalidAppIdError) as e:
        validate_app_id(bad)  # type: ignore[arg-type]
    message = str(e.value)
    assert "\n" not in message and repr(bad) in message and "e.g. 'echo-1a2b3c4d5e'" in message
    assert isinstance(e.value, ValueError) and isinstance(e.value, SchedulerError)


# -- write_private_atomic -------------------------------------------------------------------


def test_write_private_atomic_writes_whole_private_files(tmp_path: Path) -> None:
    path = tmp_path / "rec.json"
    write_private_atomic(path, "one")
    assert path.read_text() == "one" and stat.S_IMODE(path.stat().st_mode) == 0o600
    write_private_atomic(str(path), b"two\x00", 0o644, fsync=False)
    assert path.read_bytes() == b"two\x00" and stat.S_IMODE(path.stat().st_mode) == 0o644
    assert sorted(os.listdir(tmp_path)) == ["rec.json"], "no temporary file left behind"


def test_write_private_atomic_ignores_the_umask_for_its_mode(tmp_path: Path) -> None:
    old = os.umask(0o077)
    try:
        write_private_atomic(tmp_path / "cfg", "x", 0o644)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "cfg").stat().st_mode) == 0o644


def test_write_private_atomic_leaves_the_old_file_on_failure(tmp_path: Path) -> None:
    path = tmp_path / "rec"
    write_private_atomic(path, "old")
    with pytest.raises(TypeError):
        write_private_atomic(path, 42)  # type: ignore[arg-type]
    with pytest.raises(FileNotFoundError):
        write_private_atomic(tmp_path / "missing-dir" / "x", "new")
    assert path.read_text() == "old" and sorted(os.listdir(tmp_path)) == ["rec"]


def test_readers_never_see_half_a_file(tmp_path: Path) -> None:
    path = tmp_path / "big"
    small, large = b"a" * 10, b"b" * (4 << 20)
    write_private_atomic(path, small)
    stop = threading.Event()
    seen: set[int] = set()

    def read() -> None:
        while not stop.is_set():
            seen.add(len(path.read_bytes()))

    reader = threading.Thread(target=read)
    reader.start()
    for i in range(20):
        write_private_atomic(path, large if i % 2 else small, fsync=False)
    stop.set()
    reader.join()
    assert seen <= {len(small), len(large)}


# -- follow_file ----------------------------------------------------------------------------


def test_follow_reads_a_finished_file(tmp_path: Path) -> None:
    path = tmp_path / "log"
    path.write_bytes(b"a\n\nb\xff\nno newline")
    lines = list(follow_file(str(path), should_tail=False, is_done=lambda: True))
    assert lines == ["a\n", "\n", "b\ufffd\n", "no newline\n"]
    assert list(follow_file(str(tmp_path / "nope"), should_tail=False, is_done=lambda: False)) == []


def test_follow_keeps_long_lines_whole(tmp_path: Path) -> None:
    path = tmp_path / "log"
    long_line = "x" * (3 * (1 << 20) + 7)
    path.write_text(f"short\n{long_line}\né\n")
    lines = list(follow_file(str(path), should_tail=True, is_done=lambda: True))
    assert lines == ["short\n", long_line + "\n", "é\n"]


def test_follow_waits_for_the_file_and_loses_nothing_written_before_done(tmp_path: Path) -> None:
    """A writer process appends lines, then marks itself done: every line arrives, in order."""
    path, done = tmp_path / "log", tmp_path / "done"
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "time.sleep(0.2)\n"  # the file appears after following started
            "f = open(sys.argv[1], 'w', buffering=1)\n"
            "for i in range(3000):\n"
            "    f.write(f'line {i}\\n')\n"
            "    if i % 500 == 0: time.sleep(0.05)\n"
            "f.write('tail without newline'); f.close()\n"
            "open(sys.argv[2], 'w').close()\n",
            str(path),
            str(done),
        ]
    )
    try:
        lines = list(
            follow_file(str(path), should_tail=True, is_done=done.exists, poll_interval=0.01)
        )
    finally:
        writer.wait()
    assert lines == [f"line {i}\n" for i in range(3000)] + ["tail without newline\n"]


def test_follow_without_a_file_ends_when_done(tmp_path: Path) -> None:
    calls = []

    def is_done() -> bool:
        calls.append(1)
        return len(calls) > 3

    assert list(follow_file(str(tmp_path / "never"), should_tail=True, is_done=is_done)) == []
    assert len(calls) == 4


# -- the HTTP rule, client caches, pushed-image workspaces -----------------------------------


@pytest.mark.parametrize(
    ("status", "transient"),
    [(400, False), (401, False), (403, False), (404, False), (408, True), (409, False),
     (422, False), (429, True), (500, True), (501, False), (502, True), (503, True),
     (504, True), (505, False), (507, True), (599, True), (600, False), (0, False)],
)  # fmt: skip
def test_one_rule_says_which_http_answers_are_transient(status: int, transient: bool) -> None:
    from torchx.schedulers.contract.errors import transient_http_status

    assert transient_http_status(status) is transient


def test_a_client_cache_makes_once_and_closes_all() -> None:
    from torchx.schedulers.helpers.clients import ClientCache

    class Client:
        def __init__(self, key: str) -> None:
            self.key, self.closed = key, 0

        def close(self) -> None:
            self.closed += 1
            if self.key == "broken":
                raise OSError("connection reset")

    cache: ClientCache[str, object] = ClientCache(Client)
    a, broken = cache.get("a"), cache.get("broken")
    assert cache.get("a") is a
    plain = ClientCache(lambda key: object())  # a client without close() is forgotten
    plain.get("x")
    plain.close()
    cache.close()  # the broken one's error is not raised
    assert isinstance(a, Client) and a.closed == 1 and isinstance(broken, Client)
    assert broken.closed == 1 and cache.get("a") is not a  # made anew after close


def test_a_pushed_image_workspace_asks_for_image_repo_then_torchx_docker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from torchx.specs import Role
    from torchx.specs.errors import InvalidRunConfigException, SpecError
    from torchx.workspace.pushed_image import PushedImageWorkspaceMixin

    class Cloud(PushedImageWorkspaceMixin):
        distribution, puller, backend = "torchx-cloud", "CloudCo", "cloud"
        image_builder = "torchx_cloud_images"  # a module that is not installed

    roles = [Role("r", image="img:1", workspace=str(tmp_path))]
    Cloud().plan_workspaces([Role("r", image="img:1")], {})  # no workspace: nothing asked
    with pytest.raises(InvalidRunConfigException) as asked:
        Cloud().plan_workspaces(roles, {})
    assert str(asked.value) == (
        "a workspace on cloud needs the run option 'image_repo' (a registry CloudCo pulls "
        "from, e.g. -cfg image_repo=registry.example.com/team)"
    )
    monkeypatch.setitem(sys.modules, "torchx_cloud_images", None)  # not installed
    with pytest.raises(SpecError, match=r"pip install 'torchx-cloud\[docker\]'") as missing:
        Cloud().plan_workspaces(roles, {"image_repo": "r.example/team"})
    assert "\n" not in str(missing.value)

"""The AppDef kept beside an app: private, never read through a link or from someone else."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

from torchx.schedulers.helpers import appstore
from torchx.specs import AppDef, Resource, Role


def _app() -> AppDef:
    role = Role(
        "trainer",
        image="/nonexistent",
        entrypoint="python",
        args=["-m", "train", "--lr", "0.1"],
        env={"HF_TOKEN": "hf_secret", "PLAIN": "v"},
        num_replicas=2,
        max_retries=1,
        resource=Resource(cpu=1, gpu=0, memMB=128),
    )
    return AppDef("train", [role], metadata={"team": "ml"})


def test_saved_private_and_read_back(tmp_path: Path) -> None:
    state = tmp_path / "state"
    appstore.save(str(state), _app())
    kept = state / appstore.FILE
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    doc = json.loads(kept.read_text())
    assert doc["apiVersion"] == "torchx.specs/v1" and doc["kind"] == "AppDef"
    assert appstore.load(str(state)) == _app()  # secrets included: the CLI masks them


def test_an_existing_directory_is_kept(tmp_path: Path) -> None:
    appstore.save(str(tmp_path), _app(), dir_mode=0o755)
    assert appstore.load(str(tmp_path)) == _app()
    assert stat.S_IMODE((tmp_path / appstore.FILE).stat().st_mode) == 0o600


def test_a_file_others_can_read_or_write_is_not_trusted(tmp_path: Path) -> None:
    appstore.save(str(tmp_path), _app())
    path = tmp_path / appstore.FILE
    path.chmod(0o644)
    assert appstore.load(str(tmp_path)) is None
    path.chmod(0o620)
    assert appstore.load(str(tmp_path)) is None
    path.chmod(0o600)
    assert appstore.load(str(tmp_path)) == _app()
    if os.geteuid() == 0:  # only root can give a file away
        os.chown(path, 65534, 65534)
        assert appstore.load(str(tmp_path)) is None  # someone else's file


def test_a_link_is_not_followed(tmp_path: Path) -> None:
    real = tmp_path / "real"
    appstore.save(str(real), _app())
    planted = tmp_path / "planted"
    planted.mkdir()
    (planted / appstore.FILE).symlink_to(real / appstore.FILE)
    assert appstore.load(str(planted)) is None


def test_a_directory_named_like_the_file_is_no_appdef(tmp_path: Path) -> None:
    (tmp_path / appstore.FILE).mkdir(mode=0o700)
    assert appstore.load(str(tmp_path)) is None


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"\xff\xfe not utf-8",
        b"not json",
        b"[]",
        json.dumps({"apiVersion": "torchx.specs/v999", "kind": "AppDef", "spec": {}}).encode(),
        json.dumps({"apiVersion": "torchx.specs/v1", "kind": "Role", "spec": {}}).encode(),
        json.dumps({"apiVersion": "torchx.specs/v1", "kind": "AppDef", "spec": {"x": 1}}).encode(),
    ],
)
def test_another_format_gives_no_appdef(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / appstore.FILE
    path.write_bytes(content)
    path.chmod(0o600)
    assert appstore.load(str(tmp_path)) is None


def test_no_file_gives_no_appdef(tmp_path: Path) -> None:
    assert appstore.load(str(tmp_path)) is None
    assert appstore.load(str(tmp_path / "missing")) is None


@attrs.define
class MyRole(Role):
    """A Role subclass of the user's code: stored as the spec types it writes as."""


def test_an_appdef_of_user_classes_is_kept_as_spec_types(tmp_path: Path) -> None:
    role = MyRole("r", image="/x", entrypoint="echo", args=["hi"])
    appstore.save(str(tmp_path), AppDef("mine", [role]))
    kept = appstore.load(str(tmp_path))
    assert kept is not None and type(kept.roles[0]) is Role
    assert kept.roles[0].args == ["hi"]


def test_neither_way_imports_cattrs(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from torchx.schedulers.helpers import appstore\n"
        "from torchx.specs import AppDef, Role\n"
        "app = AppDef('a', [Role('r', image='i', entrypoint='e')])\n"
        f"appstore.save({str(tmp_path)!r}, app)\n"
        f"assert appstore.load({str(tmp_path)!r}) == app\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'cattrs'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_run_options_are_kept_masked_and_read_back(tmp_path: Path) -> None:
    state = tmp_path / "state"
    options = {"partition": "gpu", "mail_password": "pw-123", "sbatch_args": ["--x", "KEY=v"]}
    appstore.save(str(state), _app(), run_options=options)
    assert "pw-123" not in (state / appstore.FILE).read_text()
    app, kept = appstore.load_with_options(str(state))
    assert app == _app()
    assert kept == {"mail_password": "****", "partition": "gpu", "sbatch_args": ["--x", "KEY=****"]}
    assert appstore.load(str(state)) == _app()


def test_an_appdef_kept_without_run_options_reads_with_none(tmp_path: Path) -> None:
    state = tmp_path / "state"
    appstore.save(str(state), _app())
    assert appstore.load_with_options(str(state)) == (_app(), {})
    assert appstore.load_with_options(str(tmp_path / "missing")) == (None, {})


def test_the_run_options_of_a_dryrun_info() -> None:
    from torchx.specs import AppDryRunInfo

    info: AppDryRunInfo[str] = AppDryRunInfo("req", str)
    assert appstore.run_options_of(info) is None  # made by hand: none
    info.cfg = {"queue": "q"}
    assert appstore.run_options_of(info) == {"queue": "q"}

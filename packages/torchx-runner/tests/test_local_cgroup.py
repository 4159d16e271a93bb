"""The local app's cgroup: made where allowed, never trusted from a record blindly.

A host without a (writable) cgroup v2 hierarchy can check only that none is made or
trusted: those tests then say so by skipping with the reason after checking it, marked
``ci_may_skip`` (a capability of the host, not something CI can install).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st_h

from torchx.schedulers.local import cgroup

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the local scheduler is Linux-only")

APP = "echo-abc123"

#: may skip in CI: whether the host gives a cgroup v2 hierarchy is not the project's to install
host_capability = pytest.mark.ci_may_skip(reason="cgroup v2 and user namespaces are the host's")


def _mount() -> str:
    """The unified hierarchy's mount point, or a path no cgroup can be under."""
    return cgroup._unified_mount() or "/nonexistent-cgroup2"


@host_capability
def test_a_recorded_cgroup_is_trusted_only_with_the_apps_name_in_the_hierarchy(
    tmp_path: Path,
) -> None:
    if cgroup._unified_mount() is None:
        assert not cgroup.is_app_cgroup(f"/sys/fs/cgroup/torchx-{APP}", APP)
        pytest.skip("no cgroup v2 hierarchy here: checked only that no recorded path is trusted")
    mount = _mount().rstrip("/")
    good = f"{mount}/some/where/torchx-{APP}"
    assert cgroup.is_app_cgroup(good, APP)
    for bad in [
        None,
        42,
        "",
        f"torchx-{APP}",  # relative
        f"{mount}/some/where/torchx-other-app",  # another app's
        f"{mount}/some/where/{APP}",  # not ours by name
        f"{mount}/x/../torchx-{APP}",  # not a plain path
        f"{tmp_path}/torchx-{APP}",  # outside the hierarchy
        f"/proc/1/torchx-{APP}",
        f"{mount}torchx-{APP}",  # beside the mount point, not below it
    ]:
        assert not cgroup.is_app_cgroup(bad, APP), bad
    link = tmp_path / f"torchx-{APP}"
    link.symlink_to(mount)
    assert not cgroup.is_app_cgroup(str(link), APP)


@host_capability
@pytest.mark.skipif(
    cgroup._unified_mount() is None, reason="no cgroup v2 hierarchy here: nothing is ever trusted"
)
@given(st_h.text(max_size=80))
def test_no_recorded_text_names_a_cgroup_outside_the_hierarchy(text: str) -> None:
    if cgroup.is_app_cgroup(text, APP):
        assert text.startswith(_mount().rstrip("/") + "/")
        assert os.path.basename(text) == f"torchx-{APP}"
        assert os.path.realpath(text) == text


def test_removing_a_cgroup_that_is_gone_is_done(tmp_path: Path) -> None:
    assert cgroup.remove(str(tmp_path / f"torchx-{APP}"), timeout=0.1) is True
    assert cgroup.members(str(tmp_path / "nothing")) == []


_ENTER = """
import json, os, sys
from torchx.schedulers.local import cgroup
path = cgroup.enter(sys.argv[1])
print(json.dumps({"path": path, "me": open("/proc/self/cgroup").read()}))
"""


@host_capability
def test_made_and_left_behind_by_nobody_where_it_is_not_allowed() -> None:
    """Where the hierarchy cannot be written (a container's read-only cgroupfs; a user who
    was given none): no cgroup, nothing made. A mount namespace with the unified
    hierarchy remounted read-only stands for both."""
    mount = cgroup._unified_mount()
    if mount is None:  # no unified hierarchy at all: never available
        assert cgroup.enter(APP) is None
        pytest.skip("no cgroup v2 hierarchy here: checked only that none is made")
    if (
        not shutil.which("unshare")
        or subprocess.run(
            ["unshare", "--user", "--map-root-user", "--mount", "true"], capture_output=True
        ).returncode
    ):
        pytest.skip("needs unshare --user --mount to make the hierarchy read-only")
    app = "probe-" + os.urandom(4).hex()
    shell = f'mount -o remount,bind,ro {mount} && exec {sys.executable} -c "$0" {app}'
    proc = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", shell, _ENTER],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    assert seen["path"] is None
    assert f"torchx-{app}" not in seen["me"]
    assert not [d for d, _, _ in os.walk(mount) if d.endswith(f"torchx-{app}")]


@host_capability
def test_made_moved_into_and_removed_where_allowed() -> None:
    """Where this user may (root here), the process moves into it; removing it kills
    what is inside. Where not, None and nothing made (as above)."""
    app = "probe-" + os.urandom(4).hex()
    code = _ENTER + "import time; time.sleep(60)\n"
    proc = subprocess.Popen([sys.executable, "-c", code, app], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        seen = json.loads(proc.stdout.readline())
        if seen["path"] is None:
            assert f"torchx-{app}" not in seen["me"]
            pytest.skip("no writable cgroup v2 here: checked only that none was made")
        path = seen["path"]
        assert cgroup.is_app_cgroup(path, app)
        assert seen["me"].rstrip().endswith(f"/torchx-{app}")
        assert cgroup.members(path) == [proc.pid]
        assert cgroup.remove(path) is True
        assert proc.wait(timeout=10) == -9
        assert not os.path.exists(path)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

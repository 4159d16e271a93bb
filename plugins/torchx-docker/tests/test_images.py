"""torchx_docker.images without an engine: content-addressed tags, build contexts, the mixin.

The engine is a fake here (these are unit tests); tests/integration builds and pushes
for real against dev/docker's dockerd and registry.
"""

from __future__ import annotations

import copy
import io
import re
import tarfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import docker
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from torchx_docker.images import (
    BASE_IMAGE_KEY,
    LOCAL_REPO,
    ImageBuilder,
    ImageRef,
    ImageWorkspaceMixin,
    image_tag,
)

from torchx.schedulers.contract.api import Scheduler
from torchx.schedulers.contract.errors import SchedulerError
from torchx.specs import (
    AppDef,
    AppDryRunInfo,
    CfgVal,
    InvalidRunConfigException,
    InvalidWorkspaceException,
    Resource,
    Role,
    Workspace,
    runopts,
)


def write(path: Path, text: str = "x", mode: int = 0o644) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)
    return path


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    write(p / "train.py", "print('hi')\n", 0o755)
    write(p / "pkg" / "mod.py", "X = 1\n")
    return p


def role(image: str = "torchx-dev/busybox:1") -> Role:
    return Role("trainer", image, "python", args=["train.py"], resource=Resource(1, 0, 64))


def ws(path: Path, target: str = "") -> Workspace:
    return Workspace({str(path): target})


# --- tags -------------------------------------------------------------------------------


def test_tag_is_ws_and_20_hex_digits(proj: Path) -> None:
    assert re.fullmatch(r"ws-[0-9a-f]{20}", image_tag(role(), ws(proj)))


def test_same_files_elsewhere_give_the_same_tag(proj: Path, tmp_path: Path) -> None:
    import shutil

    other = tmp_path / "elsewhere" / "copy"
    shutil.copytree(proj, other)
    assert image_tag(role(), ws(proj)) == image_tag(role(), ws(other))


@pytest.mark.parametrize(
    "change",
    [
        lambda p: write(p / "train.py", "print('hi!')\n", 0o755),  # a byte
        lambda p: (p / "train.py").chmod(0o644),  # a mode bit
        lambda p: write(p / "new.txt"),  # a new file
        lambda p: (p / "pkg" / "mod.py").unlink(),  # a file gone
        lambda p: (p / "empty").mkdir(),  # an empty directory
        lambda p: (p / "link").symlink_to("train.py"),  # a link
        lambda p: write(p / "Dockerfile.torchx", "ARG IMAGE\nFROM $IMAGE\nCOPY . .\n"),
    ],
)
def test_a_change_of_content_changes_the_tag(proj: Path, change: Any) -> None:
    before = image_tag(role(), ws(proj))
    change(proj)
    assert image_tag(role(), ws(proj)) != before


def test_a_change_of_base_or_target_changes_the_tag(proj: Path) -> None:
    tag = image_tag(role(), ws(proj))
    assert image_tag(role("torchx-dev/python:1"), ws(proj)) != tag
    assert image_tag(role(), ws(proj, "app")) != tag


def test_a_changed_dockerfile_torchx_changes_the_tag(proj: Path) -> None:
    write(proj / "Dockerfile.torchx", "ARG IMAGE\nFROM $IMAGE\nCOPY . .\n")
    tag = image_tag(role(), ws(proj))
    write(proj / "Dockerfile.torchx", "ARG IMAGE\nFROM $IMAGE\nCOPY . /app\n")
    assert image_tag(role(), ws(proj)) != tag


@pytest.mark.parametrize("ignore_file", [".torchxignore", ".dockerignore"])
def test_ignored_files_count_for_nothing(proj: Path, ignore_file: str) -> None:
    write(proj / ignore_file, "*.pyc\ndata/\n")
    tag = image_tag(role(), ws(proj))
    write(proj / "pkg" / "mod.pyc", "compiled")
    write(proj / "data" / "big.bin", "0" * 1000)
    assert image_tag(role(), ws(proj)) == tag
    write(proj / "pkg" / "other.py", "Y = 2\n")  # not ignored
    assert image_tag(role(), ws(proj)) != tag


def test_the_tag_follows_the_base_the_workspace_was_planned_on(proj: Path) -> None:
    """After a plan, role.image names the workspace image; the base is in the metadata."""
    r = role()
    tag = image_tag(r, ws(proj))
    r.metadata[BASE_IMAGE_KEY] = r.image
    r.image = f"{LOCAL_REPO}:{tag}"
    assert image_tag(r, ws(proj)) == tag


@settings(max_examples=40, deadline=None)
@given(a=st.binary(max_size=64), b=st.binary(max_size=64))
def test_tags_differ_exactly_when_contents_differ(
    tmp_path_factory: Any, a: bytes, b: bytes
) -> None:
    d = tmp_path_factory.mktemp("h")
    (d / "one").mkdir()
    (d / "two").mkdir()
    (d / "one" / "f").write_bytes(a)
    (d / "two" / "f").write_bytes(b)
    same = image_tag(role(), ws(d / "one")) == image_tag(role(), ws(d / "two"))
    assert same == (a == b)


def test_a_missing_project_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(InvalidWorkspaceException, match="does not exist"):
        image_tag(role(), ws(tmp_path / "nope"))


@pytest.mark.parametrize("target", ["../up", "a/../b", "./x"])
def test_a_target_outside_the_workdir_is_refused(proj: Path, target: str) -> None:
    with pytest.raises(InvalidWorkspaceException, match="relative path"):
        image_tag(role(), ws(proj, target))


# --- image_repo -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "repo", ["127.0.0.1:15000/torchx-test", "registry.example.com/team/trainer", "team/a_b-c"]
)
def test_plan_tags_into_image_repo(proj: Path, repo: str) -> None:
    ref = ImageBuilder().plan(role(), ws(proj), repo)
    assert ref == ImageRef(repo, image_tag(role(), ws(proj)))
    assert str(ref) == f"{repo}:{ref.tag}"


def test_plan_without_image_repo_stays_local(proj: Path) -> None:
    assert ImageBuilder().plan(role(), ws(proj), None).repo == LOCAL_REPO


@pytest.mark.parametrize(
    "repo", ["127.0.0.1:15000/team:v1", "team/Trainer", "team/x@sha256:00", "a b", "http://r/x"]
)
def test_a_bad_image_repo_is_one_line(proj: Path, repo: str) -> None:
    with pytest.raises(InvalidRunConfigException) as e:
        ImageBuilder().plan(role(), ws(proj), repo)
    assert "\n" not in str(e.value) and "image_repo" in str(e.value)


# --- the build context ------------------------------------------------------------------


class FakeAPI:
    """The low-level docker API calls the builder makes, answered from canned chunks."""

    def __init__(self, build: list[dict[str, Any]], push: list[dict[str, Any]]) -> None:
        self.build_chunks, self.push_chunks = build, push
        self.builds: list[dict[str, Any]] = []
        self.context: dict[str, tuple[tarfile.TarInfo, bytes]] = {}
        self.pushes: list[tuple[str, str]] = []
        self.present: set[str] = set()

    def inspect_image(self, name: str) -> dict[str, Any]:
        if name not in self.present:
            raise docker.errors.ImageNotFound(f"No such image: {name}")
        return {"Id": "sha256:00"}

    def build(self, **kw: Any) -> Iterator[dict[str, Any]]:
        self.builds.append(kw)
        with tarfile.open(fileobj=io.BytesIO(kw["fileobj"].read())) as tar:
            for m in tar.getmembers():
                f = tar.extractfile(m) if m.isfile() else None
                self.context[m.name] = (m, f.read() if f else b"")
        return iter(self.build_chunks)

    def push(self, repo: str, tag: str, stream: bool, decode: bool) -> Iterator[dict[str, Any]]:
        assert stream and decode
        self.pushes.append((repo, tag))
        return iter(self.push_chunks)


class FakeClient:
    def __init__(
        self,
        build: list[dict[str, Any]] | None = None,
        push: list[dict[str, Any]] | None = None,
        present: set[str] | None = None,
    ) -> None:
        self.api = FakeAPI(
            build or [{"stream": "ok\n"}], push or [{"aux": {"Digest": "sha256:ab"}}]
        )
        self.api.present = present or set()


def builder(client: FakeClient) -> ImageBuilder:
    return ImageBuilder(client)  # type: ignore[arg-type]


def test_build_sends_a_dockerfile_and_the_files_not_ignored(proj: Path) -> None:
    write(proj / ".dockerignore", "secret.txt\n")
    write(proj / ".torchxignore", "__pycache__/\n")
    write(proj / "secret.txt")
    write(proj / "pkg" / "__pycache__" / "mod.pyc")
    (proj / "latest").symlink_to("train.py")
    client = FakeClient()
    ref = builder(client).plan(role(), ws(proj), None)
    assert builder(client).build(role(), ws(proj), ref) == ref
    (kw,) = client.api.builds
    assert kw["tag"] == str(ref) and kw["dockerfile"] == "Dockerfile"
    assert kw["custom_context"] and kw["buildargs"] == {"IMAGE": "torchx-dev/busybox:1"}
    ctx = client.api.context
    assert ctx["Dockerfile"][1] == b'FROM torchx-dev/busybox:1\nCOPY ["p0/", "./"]\n'
    names = set(ctx)
    assert names == {
        "Dockerfile", "p0", "p0/.dockerignore", "p0/.torchxignore", "p0/latest",
        "p0/pkg", "p0/pkg/mod.py", "p0/train.py",
    }  # fmt: skip
    assert ctx["p0/train.py"][0].mode == 0o755 and ctx["p0/train.py"][1] == b"print('hi')\n"
    assert ctx["p0/latest"][0].issym() and ctx["p0/latest"][0].linkname == "train.py"
    assert all(m.uid == 0 and m.gid == 0 for m, _ in ctx.values())


def test_several_projects_are_one_copy_each_into_their_targets(proj: Path, tmp_path: Path) -> None:
    other = write(tmp_path / "conf.yaml", "a: 1\n")  # a project that is one file
    client = FakeClient()
    w = Workspace({str(proj): "", str(other): "etc/app"})
    builder(client).build(role(), w, builder(client).plan(role(), w, None))
    ctx = client.api.context
    assert ctx["Dockerfile"][1].decode().splitlines() == [
        "FROM torchx-dev/busybox:1",
        'COPY ["p0/", "./"]',
        'COPY ["p1/", "./etc/app/"]',
    ]
    assert ctx["p1/conf.yaml"][1] == b"a: 1\n"


def test_dockerfile_torchx_builds_with_the_projects_laid_out_as_in_the_image(
    proj: Path, tmp_path: Path
) -> None:
    write(proj / "Dockerfile.torchx", "ARG IMAGE\nFROM $IMAGE\nCOPY . /app\n")
    extra = write(tmp_path / "extra" / "data.txt").parent
    client = FakeClient()
    w = Workspace({str(proj): "", str(extra): "data"})
    builder(client).build(role(), w, builder(client).plan(role(), w, None))
    (kw,) = client.api.builds
    assert kw["dockerfile"] == "Dockerfile.torchx"
    assert kw["buildargs"] == {"IMAGE": "torchx-dev/busybox:1"}
    assert {"Dockerfile.torchx", "train.py", "pkg/mod.py", "data", "data/data.txt"} <= set(
        client.api.context
    )


def test_an_image_the_engine_has_is_not_built_again(proj: Path) -> None:
    ref = ImageBuilder().plan(role(), ws(proj), None)
    client = FakeClient(present={str(ref)})
    assert builder(client).build(role(), ws(proj), ref) == ref
    assert client.api.builds == []


def test_files_changed_since_the_plan_are_built_under_their_own_tag(proj: Path) -> None:
    ref = ImageBuilder().plan(role(), ws(proj), None)
    write(proj / "train.py", "print('changed')\n")
    client = FakeClient()
    built = builder(client).build(role(), ws(proj), ref)
    assert built.tag == image_tag(role(), ws(proj)) != ref.tag
    assert client.api.builds[0]["tag"] == str(built)


def test_a_failed_build_is_one_line_with_the_engines_reason(proj: Path) -> None:
    client = FakeClient(build=[{"stream": "Step 1/2\n"}, {"error": "pull access denied for\nnope"}])
    ref = builder(client).plan(role("nope"), ws(proj), None)
    with pytest.raises(SchedulerError, match=r"on nope failed: pull access denied for nope$"):
        builder(client).build(role("nope"), ws(proj), ref)


def test_push_returns_repo_at_digest() -> None:
    client = FakeClient(
        push=[{"status": "Pushing"}, {"aux": {"Tag": "ws-1", "Digest": "sha256:cd"}}]
    )
    assert (
        builder(client).push(ImageRef("127.0.0.1:15000/t", "ws-1")) == "127.0.0.1:15000/t@sha256:cd"
    )
    assert client.api.pushes == [("127.0.0.1:15000/t", "ws-1")]


def test_a_failed_push_is_one_line_with_the_registrys_reason() -> None:
    client = FakeClient(push=[{"error": "Get http://127.0.0.1:1/v2/: connection refused"}])
    with pytest.raises(
        SchedulerError, match=r"pushing the workspace image 127.0.0.1:1/t:ws-1 failed"
    ):
        builder(client).push(ImageRef("127.0.0.1:1/t", "ws-1"))


def test_an_unreachable_engine_is_one_line(monkeypatch: pytest.MonkeyPatch, proj: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    b = ImageBuilder()
    with pytest.raises(SchedulerError, match=r"nonexistent/docker\.sock") as e:
        b.build(role(), ws(proj), b.plan(role(), ws(proj), None))
    assert "\n" not in str(e.value)


# --- the mixin in the submit pipeline -----------------------------------------------------


class ImageScheduler(ImageWorkspaceMixin, Scheduler[Mapping[str, CfgVal]]):
    """The smallest scheduler with image workspaces: its request is the roles' images."""

    def __init__(self, client: FakeClient) -> None:
        super().__init__("images", "test")
        self.client = client
        self.requests = 0

    def workspace_image_builder(self) -> ImageBuilder:
        return ImageBuilder(self.client)  # type: ignore[arg-type]

    def _run_opts(self) -> runopts:
        return runopts()

    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[list[str]]:
        self.requests += 1
        return AppDryRunInfo([r.image for r in app.roles], str)

    def schedule(self, dryrun_info: AppDryRunInfo[Any]) -> str:
        return "id"

    def describe(self, app_id: str) -> None:
        return None

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> list[Any]:
        return []

    def _cancel_existing(self, app_id: str) -> None:
        pass


def test_image_repo_is_a_run_option() -> None:
    opts = ImageScheduler(FakeClient()).run_opts()
    assert opts.get("image_repo") is not None


def test_a_dry_run_names_the_image_and_builds_nothing(
    proj: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_engine(*a: Any, **k: Any) -> None:
        raise AssertionError("a dry run must not reach an engine")

    monkeypatch.setattr(docker, "from_env", no_engine)
    client = FakeClient()
    s = ImageScheduler(client)
    app = AppDef("app", [role()])
    cfg = {"image_repo": "127.0.0.1:15000/torchx-test"}
    info = s.prepare(app, cfg, workspace=str(proj), dryrun=True)
    tag = image_tag(role(), ws(proj))
    assert info.request == [f"127.0.0.1:15000/torchx-test:{tag}"]
    assert info.needs_workspace_build
    assert client.api.builds == [] and client.api.pushes == []
    assert app.roles[0].image == "torchx-dev/busybox:1"  # the caller's app is untouched

    # The submission builds and pushes exactly that image and keeps the dry run's request.
    before = copy.deepcopy(info.app)
    built = s.build_workspaces_of(info)
    assert built.request is info.request and s.requests == 1
    assert [b["tag"] for b in client.api.builds] == [info.request[0]]
    assert client.api.pushes == [("127.0.0.1:15000/torchx-test", tag)]
    assert built.app.roles[0].metadata[BASE_IMAGE_KEY] == "torchx-dev/busybox:1"
    assert info.app == before  # the dry run's info is untouched


def test_a_submission_without_image_repo_builds_and_does_not_push(proj: Path) -> None:
    client = FakeClient()
    s = ImageScheduler(client)
    info = s.prepare(AppDef("app", [role()]), {}, workspace=str(proj))
    assert info.request == [f"{LOCAL_REPO}:{image_tag(role(), ws(proj))}"]
    assert len(client.api.builds) == 1 and client.api.pushes == []


def test_a_role_without_workspace_keeps_its_image(proj: Path) -> None:
    client = FakeClient()
    s = ImageScheduler(client)
    app = AppDef(
        "app", [role(), Role("other", "torchx-dev/python:1", "python", resource=Resource(1, 0, 64))]
    )
    info = s.prepare(app, {}, workspace=str(proj))
    assert info.request[1] == "torchx-dev/python:1"
    assert BASE_IMAGE_KEY not in info.app.roles[1].metadata

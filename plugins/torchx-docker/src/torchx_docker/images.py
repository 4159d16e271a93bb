"""Workspace images: the user's local files layered on top of a role's image, tagged by content.

Docker, Kubernetes and AWS ship a workspace the same way, and this module is the one
place that does it (torchx-k8s and torchx-aws import it through their ``[docker]``
extra, as any vendor would): build an image ``FROM role.image`` plus the workspace's
files, tag it with a hash of what went into it, optionally push it to the registry
named by the run option ``image_repo``, and point ``role.image`` at it.

A scheduler gets all of that by mixing in :class:`ImageWorkspaceMixin`::

    class MyScheduler(ImageWorkspaceMixin, Scheduler[Mapping[str, CfgVal]]): ...

    torchx run -s my --workspace ./proj -cfg image_repo=127.0.0.1:15000/team utils.sh ...

Or uses the pieces directly::

    builder = ImageBuilder()                      # the engine at DOCKER_HOST
    ref = builder.plan(role, workspace, "127.0.0.1:15000/team")   # no engine needed
    builder.build(role, workspace, ref)           # a no-op if the engine has the tag
    pushed = builder.push(ref)                    # "127.0.0.1:15000/team@sha256:..."

What goes into the image. Each project of the workspace (``{local dir: target}``)
is walked with :func:`torchx.workspace.walk_workspace`, leaving out what its
``.torchxignore`` and what its ``.dockerignore`` name (both read with the same
gitignore-like rules, documented there; a file left out by either is left out). The
generated Dockerfile is ``FROM <role.image>`` plus one ``COPY`` per project into
``<target>`` under the base image's working directory. A workspace whose first project
has a ``Dockerfile.torchx`` at its top uses that instead, with the projects laid out
as in the container (each at its target) as the build context and the base image
passed as the build argument ``IMAGE`` (``ARG IMAGE`` / ``FROM $IMAGE``).

Why content-addressed tags. The tag (``ws-`` and 20 hex digits) is a hash of the base
reference as written, the Dockerfile and every file taken (path, type, mode bits,
contents, link target), so it is known without an engine: a dry run prints the image
the job will run (:meth:`ImageWorkspaceMixin.plan_workspaces`), the submission builds
exactly that tag and keeps the dry run's request, a rebuild of unchanged files is a
no-op, and two users of one workspace share one image. A tag never moves to other
content, so running ``repo:tag`` is as safe as running its digest.

``docker`` (the SDK) is imported only when an engine is talked to: planning a
workspace, and so a dry run, works without the SDK reaching any engine.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, NamedTuple

from torchx.schedulers.contract.errors import SchedulerError
from torchx.specs import CfgVal, InvalidRunConfigException, Role, Workspace, runopts
from torchx.workspace import TORCHX_IGNORE, WorkspaceMixin, walk_workspace
from torchx_docker.options import IMAGE_REPO_HELP

if TYPE_CHECKING:
    import logging

    import docker

__all__ = [
    "BASE_IMAGE_KEY",
    "DOCKERFILE_TORCHX",
    "DOCKER_IGNORE",
    "LOCAL_REPO",
    "ImageBuilder",
    "ImageRef",
    "ImageWorkspaceMixin",
    "base_image",
    "image_tag",
]


def _logger() -> logging.Logger:
    import logging  # only when something is logged: the scheduler's module loads this one

    return logging.getLogger(__name__)


#: A workspace's own Dockerfile, read at the top of its first project.
DOCKERFILE_TORCHX = "Dockerfile.torchx"
#: Docker's ignore file, honoured at the top of each project besides ``.torchxignore``.
DOCKER_IGNORE = ".dockerignore"
#: The repository of workspace images when no ``image_repo`` is given (they stay local).
LOCAL_REPO = "torchx-workspace"
#: ``Role.metadata`` key keeping the image a workspace was built on (``role.image`` as
#: the user wrote it), since ``role.image`` then names the workspace image: a dry run's
#: planned roles, built later, are built on the same base and get the same tag.
BASE_IMAGE_KEY = "torchx_docker.base_image"

#: Seconds the engine may stay silent during a build or push (a large COPY says nothing).
BUILD_TIMEOUT = 600

_TAG_PREFIX = "ws-"
_TAG_HEX = 20
#: Hashed first: a change to how images are made changes every tag.
_RECIPE = b"torchx-docker workspace image v1\n"
#: Where in the build context the generated Dockerfile is (projects are under p0/, p1/, ...).
_GENERATED_DOCKERFILE = "Dockerfile"
#: image_repo: a registry host (optional) and a repository path, without tag or digest
#: (compiled when first checked: only a workspace with image_repo needs it).
_REPO_PATTERN = (
    r"(?:[A-Za-z0-9.-]+(?::[0-9]+)?/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
    r"(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*"
)


@dataclass(frozen=True)
class ImageRef:
    """A workspace image: ``repo`` (``127.0.0.1:15000/team``, or :data:`LOCAL_REPO`) and its tag."""

    repo: str
    tag: str

    def __str__(self) -> str:
        return f"{self.repo}:{self.tag}"


def base_image(role: Role) -> str:
    """The image ``role``'s workspace is built on: ``role.image`` as the user wrote it."""
    base = role.metadata.get(BASE_IMAGE_KEY)
    return base if isinstance(base, str) and base else role.image


# _Member and _Context are named tuples, not frozen dataclasses: every ``torchx run -s
# docker`` imports this module (for the mixin), and a frozen dataclass costs some 0.5 ms
# to define, named tuples a tenth of it.


class _Member(NamedTuple):
    """One entry of the build context."""

    arcname: str  # path inside the context tar
    path: str  # the file on disk ("" for a directory made up for the layout)
    kind: str  # "file", "dir" or "link"
    mode: int  # permission bits
    link: str = ""  # a link's target


class _Context(NamedTuple):
    dockerfile: str  # the Dockerfile's path inside the context
    dockerfile_text: bytes  # its contents (generated, or the workspace's own)
    members: tuple[_Member, ...]  # sorted by arcname, the Dockerfile included


def _check_repo(image_repo: str) -> str:
    repo = image_repo.strip().rstrip("/")
    if not re.fullmatch(_REPO_PATTERN, repo):
        raise InvalidRunConfigException(
            f"run option image_repo={image_repo!r} is not a repository: give a registry and"
            " a lowercase path without tag or digest, e.g. 127.0.0.1:15000/team/trainer"
        )
    return repo


def _walk_project(src: str) -> Iterator[tuple[str, str]]:
    """(path relative to ``src``, absolute path) of what a project contributes, sorted.

    A file or directory is taken when neither the project's ``.torchxignore`` nor its
    ``.dockerignore`` leaves it out (nothing inside a left-out directory comes back).
    """

    def taken(ignore_name: str) -> set[str]:
        found: set[str] = set()
        for rel, dirnames, filenames in walk_workspace(src, ignore_name):
            for name in (*dirnames, *filenames):
                found.add(f"{rel}/{name}" if rel else name)
        return found

    # Each walk lists a path only with its parent directory, so the paths both take
    # never include the insides of a directory one of them left out.
    for rel in sorted(taken(TORCHX_IGNORE) & taken(DOCKER_IGNORE)):
        yield rel, os.path.join(src, rel)


def _member(arcname: str, path: str) -> _Member:
    st = os.lstat(path)
    mode = stat.S_IMODE(st.st_mode)
    if stat.S_ISLNK(st.st_mode):
        return _Member(arcname, path, "link", 0o777, os.readlink(path))
    if stat.S_ISDIR(st.st_mode):
        return _Member(arcname, path, "dir", mode)
    if stat.S_ISREG(st.st_mode):
        return _Member(arcname, path, "file", mode)
    raise SchedulerError(f"workspace file {path} is not a file, directory or link: cannot copy it")


def _projects(workspace: Workspace) -> list[tuple[str, str]]:
    """(absolute local path, target) of each project, checking that each exists."""
    from torchx.specs import InvalidWorkspaceException

    out = []
    for src, target in workspace.projects.items():
        path = os.path.abspath(os.path.expanduser(src))
        if not os.path.exists(path):
            raise InvalidWorkspaceException(f"workspace project {src!r} does not exist")
        norm = target.strip("/")
        if norm and any(part in ("", ".", "..") for part in norm.split("/")):
            raise InvalidWorkspaceException(
                f"workspace target {target!r} of {src!r} must be a relative path inside the"
                " image's working directory, without '.' or '..'"
            )
        out.append((path, norm))
    return out


def _project_members(path: str, prefix: str) -> Iterator[_Member]:
    """The members of one project placed under ``prefix`` (``""``: the context's top)."""

    def join(rel: str) -> str:
        return f"{prefix}/{rel}" if prefix else rel

    if not os.path.isdir(path):  # a project that is one file: copied into its target
        yield _member(join(os.path.basename(path)), path)
        return
    for rel, full in _walk_project(path):
        yield _member(join(rel), full)


def _context(role: Role, workspace: Workspace) -> _Context:
    projects = _projects(workspace)
    if not projects:
        from torchx.specs import InvalidWorkspaceException

        raise InvalidWorkspaceException("the workspace names no project")
    first, first_target = projects[0]
    own = os.path.join(first, DOCKERFILE_TORCHX)
    members: dict[str, _Member] = {}
    if os.path.isdir(first) and os.path.isfile(own):
        # The workspace's own Dockerfile, with the context laid out as in the image.
        for path, target in projects:
            for parent in _parents(target):
                members.setdefault(parent, _Member(parent, "", "dir", 0o755))
            for m in _project_members(path, target):
                members[m.arcname] = m  # a later project's file wins, as merge_into does
        dockerfile = f"{first_target}/{DOCKERFILE_TORCHX}" if first_target else DOCKERFILE_TORCHX
        if dockerfile not in members:
            raise SchedulerError(f"{own} is left out by an ignore file: it cannot build the image")
        with open(own, "rb") as f:
            text = f.read()
    else:
        lines = [f"FROM {base_image(role)}"]
        for i, (path, target) in enumerate(projects):
            prefix = f"p{i}"
            members[prefix] = _Member(prefix, "", "dir", 0o755)
            for m in _project_members(path, prefix):
                members[m.arcname] = m
            dest = f"./{target}/" if target else "./"
            lines.append(f'COPY ["{prefix}/", "{dest}"]')
        dockerfile = _GENERATED_DOCKERFILE
        text = ("\n".join(lines) + "\n").encode()
        members[dockerfile] = _Member(dockerfile, "", "file", 0o644)
    return _Context(dockerfile, text, tuple(members[k] for k in sorted(members)))


def _parents(target: str) -> list[str]:
    parts = target.split("/") if target else []
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def _file_digest(path: str) -> bytes:
    import hashlib  # OpenSSL's loading costs milliseconds: only a workspace build hashes

    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.digest()


def _tag_of(base: str, ctx: _Context) -> str:
    import hashlib

    h = hashlib.sha256(_RECIPE)
    for part in (base, ctx.dockerfile):
        h.update(part.encode() + b"\0")
    h.update(hashlib.sha256(ctx.dockerfile_text).digest())
    for m in ctx.members:
        h.update(f"{m.arcname}\0{m.kind}\0{m.mode:o}\0{m.link}\0".encode())
        if m.kind == "file" and m.path:
            h.update(_file_digest(m.path))
    return _TAG_PREFIX + h.hexdigest()[:_TAG_HEX]


def image_tag(role: Role, workspace: Workspace) -> str:
    """The content-addressed tag of ``workspace`` built on ``role``'s image: no engine, no side effect.

    Same base reference, Dockerfile and files (paths, types, mode bits, contents),
    same tag; files left out by ``.torchxignore`` or ``.dockerignore`` count for nothing.
    """
    return _tag_of(base_image(role), _context(role, workspace))


def _write_context(ctx: _Context, out: IO[bytes]) -> None:
    """The build context as an uncompressed tar (owned by root, times kept)."""
    import io
    import tarfile

    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for m in ctx.members:
            info = tarfile.TarInfo(m.arcname)
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            info.mode = m.mode
            if m.path:
                info.mtime = int(os.lstat(m.path).st_mtime)
            if m.arcname == ctx.dockerfile and not m.path:  # the generated Dockerfile
                info.size = len(ctx.dockerfile_text)
                tar.addfile(info, io.BytesIO(ctx.dockerfile_text))
            elif m.kind == "dir":
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            elif m.kind == "link":
                info.type = tarfile.SYMTYPE
                info.linkname = m.link
                tar.addfile(info)
            else:
                info.size = os.path.getsize(m.path)
                with open(m.path, "rb") as f:
                    tar.addfile(info, f)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


class ImageBuilder:
    """Builds, tags and pushes workspace images on one Docker engine.

    ``client`` is a ``docker.DockerClient`` or a low-level ``docker.APIClient`` (a
    scheduler passes the one it already holds, so the image is built on the engine
    that runs it); without one, the engine named by ``DOCKER_HOST`` (and the other
    ``DOCKER_*`` variables) is used, reached only when :meth:`build` or :meth:`push`
    needs it.
    """

    def __init__(self, client: docker.DockerClient | docker.APIClient | None = None) -> None:
        api: Any = getattr(client, "api", client)  # a DockerClient's low-level client
        self._api: docker.APIClient | None = api

    @property
    def api(self) -> docker.APIClient:
        """The engine's low-level client (made from the environment on first use)."""
        if self._api is None:
            import docker
            from docker.utils import kwargs_from_env

            try:
                self._api = docker.APIClient(timeout=BUILD_TIMEOUT, **kwargs_from_env())
            except docker.errors.DockerException as e:
                host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
                raise SchedulerError(
                    f"cannot reach the Docker engine at {host} to build the workspace image:"
                    f" {_one_line(str(e))}"
                ) from None
        return self._api

    def plan(self, role: Role, workspace: Workspace, image_repo: str | None) -> ImageRef:
        """The image :meth:`build` will make for ``role``: no engine, no side effect."""
        repo = _check_repo(image_repo) if image_repo else LOCAL_REPO
        return ImageRef(repo, image_tag(role, workspace))

    def build(self, role: Role, workspace: Workspace, ref: ImageRef) -> ImageRef:
        """Makes ``ref`` from ``workspace`` on ``role``'s image; nothing to do if the engine has it.

        Raises :class:`SchedulerError` with the engine's reason (the base image missing,
        a failing ``Dockerfile.torchx`` step), leaving nothing tagged.
        """
        import tempfile

        import docker

        base = base_image(role)
        ctx = _context(role, workspace)
        tag = _tag_of(base, ctx)
        if tag != ref.tag:  # the files changed since the plan: build what they are now
            ref = ImageRef(ref.repo, tag)
        api = self.api
        try:
            api.inspect_image(str(ref))
            _logger().info("workspace image %s already built", ref)
            return ref
        except docker.errors.ImageNotFound:
            pass
        except (docker.errors.DockerException, OSError) as e:  # requests' errors are OSErrors
            host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
            raise SchedulerError(
                f"cannot reach the Docker engine at {host} to build the workspace image:"
                f" {_one_line(str(e))}"
            ) from None
        with tempfile.TemporaryFile() as f:
            _write_context(ctx, f)
            f.seek(0)
            log: list[str] = []
            try:
                for chunk in api.build(
                    fileobj=f,
                    custom_context=True,
                    tag=str(ref),
                    dockerfile=ctx.dockerfile,
                    buildargs={"IMAGE": base},
                    rm=True,
                    forcerm=True,
                    decode=True,
                    labels={BASE_IMAGE_KEY: base},
                ):
                    if "error" in chunk:
                        detail = _one_line(chunk["error"])
                        raise SchedulerError(
                            f"building the workspace image {ref} on {base} failed: {detail}"
                        )
                    if "stream" in chunk:
                        log.append(str(chunk["stream"]))
            except (docker.errors.DockerException, OSError) as e:
                raise SchedulerError(
                    f"building the workspace image {ref} on {base} failed: {_one_line(str(e))}"
                ) from None
        _logger().debug("built %s:\n%s", ref, "".join(log))
        return ref

    def push(self, ref: ImageRef) -> str:
        """Pushes ``ref`` to its registry; returns ``repo@sha256:...``, what was pushed.

        A failed push leaves the local image (a cache, not a half-submitted app) and
        raises :class:`SchedulerError` with the registry's reason.
        """
        import docker

        digest = ""
        try:
            for chunk in self.api.push(ref.repo, tag=ref.tag, stream=True, decode=True):
                if "error" in chunk:
                    raise SchedulerError(
                        f"pushing the workspace image {ref} failed: {_one_line(chunk['error'])}"
                    )
                aux = chunk.get("aux")
                if isinstance(aux, Mapping) and aux.get("Digest"):
                    digest = str(aux["Digest"])
        except (docker.errors.DockerException, OSError) as e:
            raise SchedulerError(
                f"pushing the workspace image {ref} failed: {_one_line(str(e))}"
            ) from None
        if not digest:
            raise SchedulerError(f"pushing the workspace image {ref}: the engine gave no digest")
        pushed = f"{ref.repo}@{digest}"
        _logger().info("pushed workspace image %s as %s", ref, pushed)
        return pushed


class ImageWorkspaceMixin(WorkspaceMixin[None]):
    """Ships each role's workspace as an image built on its ``role.image``.

    Adds the run option ``image_repo``. A dry run points each role with a workspace at
    the image the submission will build (:meth:`plan_workspaces`, no engine needed);
    the submission builds it, pushes it when ``image_repo`` is set, and points the
    role at it: the same ``repo:tag``, so the dry run's request is the one submitted.
    Override :meth:`workspace_image_builder` to build on an engine other than
    ``DOCKER_HOST``'s.
    """

    _workspace_image_builder: ImageBuilder | None = None

    def workspace_image_builder(self) -> ImageBuilder:
        """The builder used for submissions (one per scheduler, made when first needed)."""
        if self._workspace_image_builder is None:
            self._workspace_image_builder = ImageBuilder()
        return self._workspace_image_builder

    def workspace_opts(self) -> runopts:
        opts = runopts()
        opts.add("image_repo", str, IMAGE_REPO_HELP)
        return opts

    def plan_workspaces(self, roles: list[Role], cfg: Mapping[str, CfgVal]) -> None:
        """Points each role with a workspace at the image its build will make (a dry run)."""
        repo = _image_repo(cfg)
        for role in roles:
            if role.workspace is not None:
                base = base_image(role)
                ref = ImageBuilder(client=None).plan(role, role.workspace, repo)
                role.metadata[BASE_IMAGE_KEY] = base
                role.image = str(ref)

    def build_workspace_and_update_role(
        self, role: Role, workspace: Workspace, cfg: Mapping[str, CfgVal]
    ) -> None:
        """Builds (and with ``image_repo``, pushes) the workspace image; the role runs it."""
        builder = self.workspace_image_builder()
        base = base_image(role)
        ref = builder.build(role, workspace, builder.plan(role, workspace, _image_repo(cfg)))
        if ref.repo != LOCAL_REPO:
            builder.push(ref)
        role.metadata[BASE_IMAGE_KEY] = base
        role.image = str(ref)


def _image_repo(cfg: Mapping[str, CfgVal]) -> str | None:
    value = cfg.get("image_repo")
    return value if isinstance(value, str) and value.strip() else None

"""Sessions for the torchx monorepo.

Default sessions (``nox`` with no arguments) need no root and no services:

* ``tests-<dist>``: one per distribution. It installs only that distribution
  (non-editable, from its folder) plus the siblings it declares and its ``test``
  extra, then runs its ``tests/`` folder. Because nothing else is installed, a
  stray import of an undeclared sibling fails here.
* ``tests-acme-torchx``: the example vendor plugin's tests (examples/vendor-plugin/tests):
  the conformance kit of ``torchx-runner[testing]`` against its scheduler.
* ``lint``: ruff check and ruff format --check over the whole tree.
* ``typecheck-<dist>``: mypy --strict, one distribution at a time.
* ``repo``: tools/check_imports.py (no undeclared sibling imports, nothing private of a
  sibling: modules, names, attributes; examples/ too) and tools/tests.
* ``e2e``: local end-to-end runs of a real distributed PyTorch job (``dist.ddp`` of
  examples/ddp/train.py through the ``torchx`` command; installs torch with pip).

Run by name only:

* ``bench``: the performance targets of each issue (see bench/README.md).
* ``build``: sdist and wheel of every distribution into dist/, checked by tools/check_dist.py.
* ``docs``: the documentation site, built strictly (any Sphinx warning fails it) into
  build/site/, then docs/tests (docs/contributing.md). Over a minute here, so not a default
  session: CI runs it by name.
* ``install_matrix``: each distribution (and the example vendor plugin) installed from its
  wheel alone in a fresh environment, then used (tools/install_matrix).
* ``stress``: the long stress tests of torchx-runner (marked ``stress``).
* ``docs_browser``: the documentation site in Debian's headless Chromium (installs it when
  missing, as root): home page, search, an API page, no console errors (tools/docs_browser).
* ``ui_browser``: ``torchx ui`` in the same Chromium: an app appears, its log follows, it
  is cancelled from the page; hostile names stay text (packages/torchx-ui/tests/browser).
  ``integration_slurm`` and ``integration_docker`` take the same steps in it against
  their backend (installing Chromium when missing, as here).
* ``integration_<backend>``: root, Debian packages, a real backend started from dev/.

CI (``bash .ci/run``) runs the default sessions, ``build``, ``install_matrix``, ``docs``,
``docs_browser``, ``ui_browser``, ``stress``
and every session named in ``INTEGRATION_SESSIONS``, then checks nox's ``--report`` that
each one of them ran and passed (tools/ci_sessions.py). Adding an integration session
touches this file alone: define ``integration_<backend>`` and add its name to
``INTEGRATION_SESSIONS``. A session whose name starts with ``integration`` but is not
listed there (or a listed name with no session) fails CI and ``nox -s repo`` with one
line saying so.

Every session runs pytest with tools/pytest_plugins/ci_skips.py: skips are listed and
counted (``ci_skips: N skipped ...``), and under ``CI=true`` a test that skips fails,
unless it is marked ``@pytest.mark.ci_may_skip(reason=...)`` (a host capability CI
cannot install, such as a writable cgroup v2). ``TORCHX_STRICT_SKIPS=1`` does the same
outside CI.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tomllib
from collections.abc import Iterator
from pathlib import Path

import nox

ROOT = Path(__file__).parent
nox.options.default_venv_backend = "uv|virtualenv"
nox.options.reuse_existing_virtualenvs = False
nox.options.error_on_missing_interpreters = True

PYTHON = "3.11"

# The distributions' ``[tool.uv.sources]`` name their siblings as workspace members, which
# makes ``uv pip install ./packages/x`` install those siblings *editable*. Sessions test
# what a user installs, so every uv call from here resolves from the published metadata
# (siblings come from the folders given on the command line, built as wheels).
os.environ["UV_NO_SOURCES"] = "1"


def _distributions() -> dict[str, Path]:
    """Every distribution folder (one with a pyproject.toml) by its project name."""
    found: dict[str, Path] = {}
    for group in ("packages", "plugins"):
        for pyproject in sorted((ROOT / group).glob("*/pyproject.toml")):
            name = tomllib.loads(pyproject.read_text())["project"]["name"]
            found[name] = pyproject.parent
    return found


DISTS = _distributions()


def _requirement_name(req: str) -> str:
    match = re.match(r"[A-Za-z0-9_.\-]+", req)
    return match.group(0).lower().replace("_", "-") if match else ""


def siblings(dist: str) -> list[str]:
    """The sibling distributions ``dist`` depends on, transitively, dependencies first."""
    order: list[str] = []

    def visit(name: str) -> None:
        meta = tomllib.loads((DISTS[name] / "pyproject.toml").read_text())["project"]
        for req in meta.get("dependencies", []):
            dep = _requirement_name(req)
            if dep in DISTS and dep not in order:
                visit(dep)
                order.append(dep)

    visit(dist)
    return order


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


CI_SKIPS = ROOT / "tools" / "pytest_plugins"


def run_pytest(session: nox.Session, *args: str, env: dict[str, str] | None = None) -> None:
    """pytest with the skip policy of tools/pytest_plugins/ci_skips.py: skips are counted,
    and under ``CI=true`` a test that skips fails unless it is marked ``ci_may_skip``.

    Only that folder is put on ``PYTHONPATH`` (never the source tree)."""
    env = dict(env or {})
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(CI_SKIPS), env.get("PYTHONPATH")]))
    session.run("pytest", "-p", "no:cacheprovider", "-p", "ci_skips", *args, env=env)


def install_dist(session: nox.Session, dist: str, extras: str = "test") -> None:
    """Install ``dist`` non-editable with the siblings it declares (local folders)."""
    args = [_rel(DISTS[s]) for s in siblings(dist)]
    target = _rel(DISTS[dist])
    extras_declared = tomllib.loads((DISTS[dist] / "pyproject.toml").read_text())["project"].get(
        "optional-dependencies", {}
    )
    args.append(f"{target}[{extras}]" if extras and extras in extras_declared else target)
    session.install(*args)


for _dist in DISTS:

    @nox.session(name=f"tests-{_dist}", python=PYTHON)
    def _tests(session: nox.Session, dist: str = _dist) -> None:
        install_dist(session, dist)
        tests = DISTS[dist] / "tests"
        # Run from the tests folder so the source tree is never on sys.path:
        # what is tested is what was installed.
        session.chdir(tests)
        run_pytest(session, *session.posargs)

    @nox.session(name=f"typecheck-{_dist}", python=PYTHON)
    def _typecheck(session: nox.Session, dist: str = _dist) -> None:
        # the "testing" extra, where declared: torchx-runner's conformance kit imports pytest
        install_dist(session, dist, extras="testing")
        session.install("mypy==2.4.1")
        srcs = [str(DISTS[d] / "src") for d in [*siblings(dist), dist]]
        env = {"MYPYPATH": os.pathsep.join(srcs)}
        pkg_root = DISTS[dist] / "src"
        session.run(
            "mypy",
            "--strict",
            "--namespace-packages",
            "--explicit-package-bases",
            "--python-version",
            PYTHON,
            _rel(pkg_root),
            env=env,
        )


VENDOR_PLUGIN = ROOT / "examples" / "vendor-plugin"


@nox.session(name="tests-acme-torchx", python=PYTHON)
def tests_vendor_plugin(session: nox.Session) -> None:
    """The example vendor plugin's own tests: TorchX's conformance kit against its scheduler.

    Installs the plugin (non-editable) with its ``test`` extra, which pulls
    ``torchx-runner[testing]`` from the local folders, as a vendor's CI would from PyPI.
    """
    install_dist(session, "torchx-runner", extras="testing")
    session.install(f"{_rel(VENDOR_PLUGIN)}[test]")
    session.chdir(VENDOR_PLUGIN / "tests")
    run_pytest(session, *session.posargs)


@nox.session(python=PYTHON)
def stress(session: nox.Session) -> None:
    """The long stress tests (marked ``stress``): e.g. 1,000 instant apps on the local scheduler."""
    install_dist(session, "torchx-runner")
    session.chdir(DISTS["torchx-runner"] / "tests")
    run_pytest(session, "-m", "stress", *session.posargs)


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    session.install("ruff==0.17.6")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session(python=PYTHON)
def build(session: nox.Session) -> None:
    """Build every distribution's sdist and wheel into dist/<name>/ and check them.

    The wheel is built from the sdist; tools/check_dist.py then checks metadata,
    license, py.typed, the namespace and layout, version and sibling ranges.
    """
    session.install("packaging", "twine", "readme_renderer[md]")
    uv = shutil.which("uv")
    if uv is None:
        session.install("build")
    for dist, folder in DISTS.items():
        out = ROOT / "dist" / dist
        shutil.rmtree(out, ignore_errors=True)
        if uv is not None:
            session.run(uv, "build", "-q", "--out-dir", _rel(out), _rel(folder), external=True)
        else:
            session.run("python", "-m", "build", "--outdir", _rel(out), _rel(folder))
    session.run("python", "tools/check_dist.py", "--all", "dist", "--twine")


@nox.session(python=PYTHON)
def repo(session: nox.Session) -> None:
    """Repository-level checks: tools/check_imports.py, then the tests in tools/tests
    (among them, that .ci/run runs every session it should: tools/ci_sessions.py)."""
    session.install("pytest", "hypothesis", "packaging", "twine", "readme_renderer[md]", "PyYAML")
    # the pinned nox of .ci/run: tools/tests run .ci/run and tools/ci_sessions.py
    session.install("-r", ".ci/requirements.txt")
    if shutil.which("uv") is None:
        session.install("build")
    # torchx-specs for the hookspecs the plugin docs are tested against; torchx-runner
    # for the Scheduler the docs' example plugin subclasses; torchx-cli for the docs'
    # `torchx` commands that tools/tests/test_doc_commands.py runs.
    install_dist(session, "torchx-cli", extras="")
    # the plugins too: the capability table of docs/plugins.md lists every installed scheduler
    plugins = [_rel(folder) for folder in DISTS.values() if folder.parent.name == "plugins"]
    if plugins:
        session.install(*plugins)
    session.run("python", "tools/check_imports.py")
    run_pytest(session, "tools/tests", *session.posargs)


#: Where ``nox -s docs`` writes the site (static HTML, git-ignored with build/).
DOCS_SITE = ROOT / "build" / "site"


def build_docs(session: nox.Session) -> Path:
    """Installs every distribution and docs/requirements.txt, builds the site; its folder.

    Strict: any Sphinx warning (a docstring that does not parse, a broken link, a
    reference to a missing name of the project) fails the build (``-W -n``).
    """
    session.install(
        "-r",
        "docs/requirements.txt",
        *(_rel(path) for path in DISTS.values() if path.name != "torchx-runner"),
        f"{_rel(DISTS['torchx-runner'])}[testing]",
    )
    # a reused venv (-R) keeps an installed folder of the same version: reinstall ours, so
    # that the pages show the docstrings of this checkout
    session.install("--no-deps", "--force-reinstall", "-q", *(_rel(p) for p in DISTS.values()))
    # Always from scratch: an installed module keeps its timestamp across reinstalls, so an
    # incremental build would keep yesterday's docstrings (and pages no longer generated).
    shutil.rmtree(DOCS_SITE, ignore_errors=True)
    shutil.rmtree(ROOT / "build" / "doctrees", ignore_errors=True)
    session.run(
        "sphinx-build",
        "-W",
        "--keep-going",
        "-n",
        "-q",
        "-j",
        "auto",
        "-b",
        "html",
        "-d",
        _rel(ROOT / "build" / "doctrees"),
        "docs",
        _rel(DOCS_SITE),
    )
    return DOCS_SITE


@nox.session(python=PYTHON)
def docs(session: nox.Session) -> None:
    """The documentation site, into build/site/ (see docs/contributing.md), then its tests.

    Pages are docs/*.md, the READMEs and CHANGELOGs they include, and pages generated
    from the installed code at every build (API, CLI, run options, components).
    """
    build_docs(session)
    session.install("pytest")
    run_pytest(session, "docs/tests", *session.posargs)


def _ensure_chromium(session: nox.Session) -> None:
    """Debian's Chromium for the browser tests: installed here (root, apt-get) when missing;
    without it the session fails, saying how to get it (``TORCHX_CHROMIUM`` names another)."""
    if os.environ.get("TORCHX_CHROMIUM") or shutil.which("chromium"):
        return
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        session.error(
            "the browser tests need Chromium: apt-get install chromium (as root), "
            "or TORCHX_CHROMIUM=/path/to/chromium"
        )
    env = {"DEBIAN_FRONTEND": "noninteractive"}
    session.run("apt-get", "update", "-qq", external=True, env=env)
    session.run("apt-get", "install", "-y", "-qq", "chromium", external=True, env=env)


@nox.session(python=PYTHON)
def docs_browser(session: nox.Session) -> None:
    """The documentation site in a real headless browser (tools/docs_browser).

    Debian's Chromium (installed when missing, as root) driven over the DevTools protocol
    through a pipe; the site is served on 127.0.0.1. The harness's own checks run on tiny
    pages made to fail them; the site's (home page, a search for ``dist.ddp``, an API page,
    no console error on any) on the site: the folder ``TORCHX_DOCS_SITE`` names (.ci/run
    passes the one ``docs`` just built), else built here as ``docs`` builds it.
    """
    _ensure_chromium(session)
    given = os.environ.get("TORCHX_DOCS_SITE")
    site = Path(given) if given else build_docs(session)
    session.install("pytest")
    run_pytest(session, "tools/docs_browser", *session.posargs, env={"TORCHX_DOCS_SITE": str(site)})


@nox.session(python=PYTHON)
def ui_browser(session: nox.Session) -> None:
    """``torchx ui`` in Debian's headless Chromium (packages/torchx-ui/tests/browser).

    Installs Chromium when missing (as root), torchx-ui from its folder, and drives the
    page over the DevTools protocol with the docs check's harness (tools/docs_browser):
    an app run from the CLI appears, its log follows, cancel from the page ends it, a
    hostile name and log line stay text, a request without the token is refused. The
    same steps (tests/browser/flow.py) run against Slurm and Docker in
    ``integration_slurm`` and ``integration_docker``.
    """
    _ensure_chromium(session)
    install_dist(session, "torchx-ui")
    session.chdir(DISTS["torchx-ui"] / "tests")
    run_pytest(session, "browser", *session.posargs, env=_ui_browser_env())


def _ui_browser_env(backend: str = "") -> dict[str, str]:
    """The environment of torchx-ui's browser tests: the docs check's DevTools harness
    (tools/docs_browser/cdp.py) on the path; the local ones (``TORCHX_UI_BROWSER=1``), or
    with ``backend`` that backend's (tests/integration/test_BACKEND.py, its backend up)."""
    env = {"PYTHONPATH": str(ROOT / "tools" / "docs_browser")}
    env.update({"TORCHX_UI_INTEGRATION": backend} if backend else {"TORCHX_UI_BROWSER": "1"})
    return env


@nox.session(python=PYTHON)
def install_matrix(session: nox.Session) -> None:
    """Fresh environments holding only built wheels and their PyPI dependencies.

    The tests in tools/install_matrix build each wheel once, make one ``uv venv``
    per row and use what is installed: torchx-specs alone, torchx-runner alone,
    torchx-cli, torchx-runner + torchx-slurm and torchx-runner + torchx-lsf (submitting from
    Python, no CLI), torchx-ui (its page served from the wheel), and the
    example vendor plugin beside torchx-cli (with fixture plugins: one broken, one with
    upstream's legacy entry points only, one clashing).
    ``TORCHX_MATRIX_WHEELS=dist`` installs the wheels ``nox -s build`` left there.
    """
    session.install("pytest")
    if shutil.which("uv") is None:
        session.install("uv")
    run_pytest(session, "tools/install_matrix", *session.posargs)


TORCH = "torch==2.13.0"


@nox.session(python=PYTHON, venv_backend="virtualenv")
def e2e(session: nox.Session) -> None:
    """Local end-to-end runs with real torch: ``torchx run --wait --log dist.ddp -j 1x2`` and
    ``-j 2x1 --script examples/ddp/train.py``, checking the all_reduce result of every rank.

    A virtualenv (not uv) venv: torch is installed with pip, because uv does not see the
    local torch build.
    """
    install_dist(session, "torchx-cli")
    session.run("python", "-m", "pip", "install", "-q", TORCH, "numpy")
    session.chdir(DISTS["torchx-cli"] / "tests")
    run_pytest(
        session,
        "e2e",
        *session.posargs,
        env={"TORCHX_E2E": "1", "TORCHX_REPO_ROOT": str(ROOT)},
    )


def _cluster_up(session: nox.Session, script: Path) -> dict[str, str]:
    """``script up`` (progress on stderr, shown); its ``export NAME=VALUE`` lines as a dict."""
    import subprocess

    proc = subprocess.run([str(script), "up"], stdout=subprocess.PIPE, text=True, check=False)
    if proc.returncode != 0:
        session.error(f"{_rel(script)} up failed (exit {proc.returncode}): see its message above")
    env: dict[str, str] = {}
    for line in proc.stdout.splitlines():
        match = re.fullmatch(r"export ([A-Za-z_][A-Za-z0-9_]*)=(.*)", line.strip())
        if match:
            env[match.group(1)] = match.group(2)
    return env


@contextlib.contextmanager
def _machine_lock(session: nox.Session, path: Path) -> Iterator[None]:
    """Holds an exclusive lock on ``path`` (created if needed), waiting for it if taken."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            session.log(f"waiting for another run holding {path}")
            fcntl.flock(f, fcntl.LOCK_EX)
        yield


#: The integration sessions CI runs, in this order (.ci/run reads this literal through
#: tools/ci_sessions.py, which fails if it disagrees with the ``integration*`` sessions
#: defined here). A new backend: define ``integration_<backend>`` and add it here.
INTEGRATION_SESSIONS = (
    "integration_slurm",
    "integration_docker",
    "integration_lsf",
    "integration_k8s",
    "integration_aws",
)


@nox.session(name="integration_slurm", python=PYTHON, venv_backend="virtualenv")
def integration_slurm(session: nox.Session) -> None:
    """The torchx-slurm integration tests against a real Slurm cluster on this machine.

    ``dev/slurm up`` installs Slurm, munge, slurmdbd and MariaDB (Debian packages; root)
    and starts a 4-node cluster on loopback; the tests in
    plugins/torchx-slurm/tests/integration then go through Slurm's commands, the ``torchx``
    command and the Runner, run the conformance kit and the README's DDP example (real
    torch, installed with pip as in ``e2e``), then ``torchx ui -s slurm`` is driven in
    Debian's headless Chromium (installed when missing, as in ``ui_browser``; torchx-ui
    installed too): an app run from the CLI appears, its log follows, cancel and delete
    from the page (packages/torchx-ui/tests/integration/test_slurm.py). ``dev/slurm down``
    stops the cluster afterwards, pass or fail.
    """
    _ensure_chromium(session)
    # torchx-runner with the conformance kit, the plugin, and the torchx command
    # torchx-ui: `torchx ui -s slurm` (packages/torchx-ui/tests/integration)
    wanted = {
        "torchx-runner": "testing",
        "torchx-slurm": "test",
        "torchx-cli": "",
        "torchx-ui": "",
    }
    args = [_rel(DISTS["torchx-specs"])]
    args += [
        f"{_rel(DISTS[d])}[{x}]" if x else _rel(DISTS[d]) for d, x in wanted.items() if d in DISTS
    ]
    session.install(*args, "pytest")
    # pip keeps an installed folder of the same version as it is: with -R (a reused venv)
    # the tests would run yesterday's code
    local = [_rel(DISTS[d]) for d in ("torchx-specs", *wanted) if d in DISTS]
    session.install("--no-deps", "--force-reinstall", "-q", *local)
    # real torch for the README's DDP example on two nodes (pip: see the e2e session)
    session.run("python", "-m", "pip", "install", "-q", TORCH, "numpy")
    script = ROOT / "dev" / "slurm"
    # One cluster per machine (fixed loopback ports): a second run of this session (from
    # another checkout) waits here rather than have its `down` stop the cluster under us.
    state = os.environ.get("TORCHX_DEV_SLURM_DIR", "/var/tmp/torchx-dev-slurm")
    with _machine_lock(session, Path(f"{state}.lock")):
        env = _cluster_up(session, script)
        try:
            session.chdir(ROOT / "plugins" / "torchx-slurm" / "tests" / "integration")
            run_pytest(
                session,
                *session.posargs,
                env={**env, "TORCHX_SLURM_INTEGRATION": "1", "TORCHX_REPO_ROOT": str(ROOT)},
            )
            # `torchx ui -s slurm` (packages/torchx-ui/tests/integration/test_slurm.py)
            session.chdir(DISTS["torchx-ui"] / "tests")
            run_pytest(session, "integration", env={**env, **_ui_browser_env("slurm")})
        finally:
            session.run(str(script), "down", external=True)


@nox.session(name="integration_docker", python=PYTHON, venv_backend="virtualenv")
def integration_docker(session: nox.Session) -> None:
    """The torchx-docker integration tests against a real Docker engine on this machine.

    ``dev/docker up`` installs Debian's docker.io (root), starts dockerd on a private
    socket and data root and makes the test images; the tests in
    plugins/torchx-docker/tests/integration then go through the ``torchx`` command and
    the Runner: the conformance kit, replicas meeting over TCP, OOM kills, retries, logs,
    and faults (the engine stopped during a run, absent at submit, a container removed
    by hand); then ``torchx ui -s docker`` is driven in Debian's headless Chromium
    (installed when missing, as in ``ui_browser``; torchx-ui installed too): an app run from
    the CLI appears, its log follows, cancel and delete from the page
    (packages/torchx-ui/tests/integration/test_docker.py). ``dev/docker down`` stops the
    engine afterwards, pass or fail.
    """
    _ensure_chromium(session)
    # torchx-ui: `torchx ui -s docker` (packages/torchx-ui/tests/integration)
    wanted = {
        # functions: cloudpickle, the kit's functions checks send by value
        "torchx-runner": "testing,functions",
        "torchx-docker": "test",
        "torchx-cli": "",
        "torchx-ui": "",
    }
    args = [_rel(DISTS["torchx-specs"])]
    args += [f"{_rel(DISTS[d])}[{x}]" if x else _rel(DISTS[d]) for d, x in wanted.items()]
    session.install(*args, "pytest")
    # a reused venv (-R) keeps an installed folder of the same version: reinstall ours
    local = [_rel(DISTS[d]) for d in ("torchx-specs", *wanted)]
    session.install("--no-deps", "--force-reinstall", "-q", *local)
    script = ROOT / "dev" / "docker"
    # One engine per machine (a fixed bridge and socket): a second run waits here.
    state = os.environ.get("TORCHX_DEV_DOCKER_DIR", "/var/tmp/torchx-dev-docker")
    with _machine_lock(session, Path(f"{state}.lock")):
        env = _cluster_up(session, script)
        try:
            session.chdir(ROOT / "plugins" / "torchx-docker" / "tests" / "integration")
            run_pytest(
                session,
                *session.posargs,
                env={**env, "TORCHX_DOCKER_INTEGRATION": "1", "TORCHX_REPO_ROOT": str(ROOT)},
            )
            # `torchx ui -s docker` (packages/torchx-ui/tests/integration/test_docker.py)
            session.chdir(DISTS["torchx-ui"] / "tests")
            run_pytest(session, "integration", env={**env, **_ui_browser_env("docker")})
        finally:
            session.run(str(script), "down", external=True)


@nox.session(name="integration_lsf", python=PYTHON, venv_backend="virtualenv")
def integration_lsf(session: nox.Session) -> None:
    """The torchx-lsf integration tests against the project's LSF stand-in on this machine.

    LSF cannot be installed here: ``dev/lsf up`` puts the project's stand-in for ``bsub``,
    ``bjobs`` and ``bkill`` on PATH (jobs run on this machine, one supervisor each; its
    differences from real LSF are listed in dev/README.md). The tests in
    plugins/torchx-lsf/tests/integration then run the conformance kit and apps through
    the ``torchx`` command: replicas meeting over TCP at the rank-0 host, a failing
    replica, cancel, logs, list and status from new processes, and replicas in
    containers (``dev/docker up`` with its busybox image, under the engine's lock).
    ``dev/lsf down`` and ``dev/docker down`` stop what is left afterwards, pass or fail.
    """
    wanted = {"torchx-runner": "testing", "torchx-lsf": "test", "torchx-cli": ""}
    args = [_rel(DISTS["torchx-specs"])]
    args += [f"{_rel(DISTS[d])}[{x}]" if x else _rel(DISTS[d]) for d, x in wanted.items()]
    session.install(*args, "pytest")
    # a reused venv (-R) keeps an installed folder of the same version: reinstall ours
    local = [_rel(DISTS[d]) for d in ("torchx-specs", *wanted)]
    session.install("--no-deps", "--force-reinstall", "-q", *local)
    script = ROOT / "dev" / "lsf"
    docker = ROOT / "dev" / "docker"
    # one stand-in per machine (its state and job ids are shared): a second run waits
    # here; the Docker engine (for replicas in containers) is shared with
    # integration_docker, whose lock is held while it is used
    state = os.environ.get("TORCHX_DEV_LSF_DIR", "/var/tmp/torchx-dev-lsf")
    engine = os.environ.get("TORCHX_DEV_DOCKER_DIR", "/var/tmp/torchx-dev-docker")
    with (
        _machine_lock(session, Path(f"{state}.lock")),
        _machine_lock(session, Path(f"{engine}.lock")),
    ):
        os.environ["TORCHX_DEV_DOCKER_IMAGES"] = "busybox"  # only the small test image
        try:
            env = _cluster_up(session, docker)
        finally:
            os.environ.pop("TORCHX_DEV_DOCKER_IMAGES", None)
        try:
            env.update(_cluster_up(session, script))
            # the stand-in's commands first, then this session's venv (up's PATH is nox's)
            env["PATH"] = os.pathsep.join(
                [env["TORCHX_DEV_LSF_BIN"], str(session.bin), os.environ.get("PATH", "")]
            )
            try:
                session.chdir(ROOT / "plugins" / "torchx-lsf" / "tests" / "integration")
                run_pytest(
                    session,
                    *session.posargs,
                    env={**env, "TORCHX_LSF_INTEGRATION": "1", "TORCHX_REPO_ROOT": str(ROOT)},
                )
            finally:
                session.run(str(script), "down", external=True)
        finally:
            session.run(str(docker), "down", external=True)


@nox.session(name="integration_k8s", python=PYTHON, venv_backend="virtualenv")
def integration_k8s(session: nox.Session) -> None:
    """Tests against a real Kubernetes cluster of one node, the stand-in playing the rest.

    ``dev/docker up`` (its images are copied to the node; its registry serves the DDP
    example's workspace image), then ``dev/k8s up``: kube-apiserver 1.20, etcd, a real
    node (kubelet with dockershim, kube-scheduler, kube-controller-manager, Volcano
    v1.5.1, dnsmasq as the cluster DNS; built once from source) and the stand-in in
    dev/k8s-standin/ for what cannot run on 1.20 (JobSet's and the AppWrapper
    controllers). Two suites run: the stand-in's own tests (dev/k8s-standin/tests:
    JobSets, AppWrappers and pods as raw API objects, checked against what the real
    controllers would do with them, and the cluster DNS), then torchx-k8s's
    (plugins/torchx-k8s/tests/integration: the scheduler through the ``torchx`` command
    and the Runner, the conformance kit, the README's DDP example). ``TORCHX_K8S_SUITES=plugin``
    (or ``standin``) runs one of them (posargs go to each suite run). Both machine locks
    are held (k8s, then docker: integration_docker stops dockerd in its fault tests);
    ``dev/k8s down`` and ``dev/docker down`` run afterwards, pass or fail.
    """
    # torchx-docker: the plugin's "docker" extra builds the DDP example's workspace image
    wanted = {
        # functions: cloudpickle, the kit's functions checks send by value
        "torchx-runner": "testing,functions",
        "torchx-docker": "",
        "torchx-k8s": "test,docker",
        "torchx-cli": "",
    }
    args = [_rel(DISTS["torchx-specs"])]
    args += [f"{_rel(DISTS[d])}[{x}]" if x else _rel(DISTS[d]) for d, x in wanted.items()]
    session.install(*args, "pytest")
    # a reused venv (-R) keeps an installed folder of the same version: reinstall ours
    local = [_rel(DISTS[d]) for d in ("torchx-specs", *wanted)]
    session.install("--no-deps", "--force-reinstall", "-q", *local)
    suites = os.environ.get("TORCHX_K8S_SUITES", "standin,plugin").split(",")
    k8s_state = os.environ.get("TORCHX_DEV_K8S_DIR", "/var/tmp/torchx-dev-k8s")
    docker_state = os.environ.get("TORCHX_DEV_DOCKER_DIR", "/var/tmp/torchx-dev-docker")
    docker, k8s = ROOT / "dev" / "docker", ROOT / "dev" / "k8s"
    with (
        _machine_lock(session, Path(f"{k8s_state}.lock")),
        _machine_lock(session, Path(f"{docker_state}.lock")),
    ):
        try:
            env = _cluster_up(session, docker)
            env.update(_cluster_up(session, k8s))
            if "standin" in suites:
                session.chdir(ROOT / "dev" / "k8s-standin" / "tests")
                run_pytest(
                    session, *session.posargs, env={**env, "TORCHX_K8S_STANDIN_INTEGRATION": "1"}
                )
            if "plugin" in suites:
                session.chdir(ROOT / "plugins" / "torchx-k8s" / "tests" / "integration")
                plugin_env = {"TORCHX_K8S_INTEGRATION": "1", "TORCHX_REPO_ROOT": str(ROOT)}
                run_pytest(session, *session.posargs, env={**env, **plugin_env})
        finally:
            session.run(str(k8s), "down", external=True)
            session.run(str(docker), "down", external=True)


@nox.session(name="integration_aws", python=PYTHON, venv_backend="virtualenv")
def integration_aws(session: nox.Session) -> None:
    """The torchx-aws integration tests against an AWS API emulator running jobs in containers.

    ``dev/docker up`` starts the Docker engine (root) and ``dev/aws up`` moto's server on
    loopback (from PyPI, in a venv of its own), which runs each Batch job's nodes as
    containers on that engine; the tests in plugins/torchx-aws/tests/integration make the
    Batch prerequisites (compute environment, queue), then run the conformance kit and the
    scheduler's own checks with real boto3, and the faults (endpoint down, throttling, bad
    credentials), and ``torchx.functions`` (its jobs in dev/docker's python image). Both
    are stopped afterwards, pass or fail. Holds the Docker engine's machine lock (and the
    emulator's: a fixed port) while it runs.
    """
    wanted = {
        # functions: cloudpickle, the kit's functions checks send by value
        "torchx-runner": "testing,functions",
        "torchx-docker": "",
        "torchx-aws": "test,docker",
        "torchx-cli": "",
    }
    args = [_rel(DISTS["torchx-specs"])]
    args += [f"{_rel(DISTS[d])}[{x}]" if x else _rel(DISTS[d]) for d, x in wanted.items()]
    session.install(*args, "pytest")
    # a reused venv (-R) keeps an installed folder of the same version: reinstall ours
    local = [_rel(DISTS[d]) for d in ("torchx-specs", *wanted)]
    session.install("--no-deps", "--force-reinstall", "-q", *local)
    docker_state = os.environ.get("TORCHX_DEV_DOCKER_DIR", "/var/tmp/torchx-dev-docker")
    aws_state = os.environ.get("TORCHX_DEV_AWS_DIR", "/var/tmp/torchx-dev-aws")
    with (
        _machine_lock(session, Path(f"{docker_state}.lock")),
        _machine_lock(session, Path(f"{aws_state}.lock")),
    ):
        docker_script, aws_script = ROOT / "dev" / "docker", ROOT / "dev" / "aws"
        # both images: busybox for most jobs, python for torchx.functions' calls
        env = _cluster_up(session, docker_script)
        try:
            saved = {k: os.environ.get(k) for k in env}
            os.environ.update(env)  # dev/aws reads DOCKER_HOST
            try:
                env.update(_cluster_up(session, aws_script))
            finally:
                for k, v in saved.items():
                    if v is None:
                        os.environ.pop(k, None)
                    else:
                        os.environ[k] = v
            try:
                session.chdir(ROOT / "plugins" / "torchx-aws" / "tests" / "integration")
                run_pytest(
                    session,
                    *session.posargs,
                    env={**env, "TORCHX_AWS_INTEGRATION": "1", "TORCHX_REPO_ROOT": str(ROOT)},
                )
            finally:
                session.run(str(aws_script), "down", external=True, env=env)
        finally:
            session.run(str(docker_script), "down", external=True)


nox.options.sessions = [
    *(f"tests-{d}" for d in DISTS),
    "tests-acme-torchx",
    "lint",
    *(f"typecheck-{d}" for d in DISTS),
    "repo",
    "e2e",
]


# with its kubernetes extra: the kubernetes cases compare with upstream's kubernetes scheduler
UPSTREAM_TORCHX = "torchx[kubernetes]==0.7.0"
UPSTREAM_VENV = ROOT / "bench" / ".venvs" / "upstream"


def _upstream_python(session: nox.Session) -> Path:
    """A venv with upstream TorchX from PyPI, created once and reused (bench/.venvs/)."""
    python = UPSTREAM_VENV / "bin" / "python"
    wanted = UPSTREAM_TORCHX.split("==")[1]
    # a venv made before the extra was wanted lacks the client: made again
    check = "import importlib.metadata as m, kubernetes; print(m.version('torchx'))"
    if python.exists():
        found = session.run(
            str(python), "-c", check, silent=True, success_codes=[0, 1], external=True
        )
        if isinstance(found, str) and found.strip() == wanted:
            return python
    # Same interpreter as the session's venv, so only the packages differ.
    base = str(
        session.run("python", "-c", "import sys; print(sys._base_executable)", silent=True)
    ).strip()
    if shutil.which("uv"):
        session.run("uv", "venv", "--clear", "-q", "-p", base, str(UPSTREAM_VENV), external=True)
        session.run("uv", "pip", "install", "-q", "-p", str(python), UPSTREAM_TORCHX, external=True)
    else:
        session.run(base, "-m", "venv", "--clear", str(UPSTREAM_VENV), external=True)
        session.run(str(python), "-m", "pip", "install", "-q", UPSTREAM_TORCHX, external=True)
    return python


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """Performance targets, ours side by side with upstream TorchX (see bench/README.md).

    Installs every local distribution non-editable, then runs bench/run.py; posargs go to
    it (``nox -s bench -- -k specs.import --fail-on-miss``).
    """
    # submitit (PyPI): the functions cases run it side by side with torchx.functions
    session.install(*(_rel(path) for path in DISTS.values()), "submitit")
    upstream = _upstream_python(session)
    session.run("python", "bench/run.py", "--upstream-python", str(upstream), *session.posargs)

"""The scheduler conformance kit: the contract's tests, run by a plugin against its real backend.

Every scheduler plugin runs the same checks in its own test suite, against the real
backend (a Slurm cluster, a container engine, a cloud emulator), so that each one
keeps the Scheduler contract the same way. Install it with the extra
``torchx-runner[testing]`` (it needs pytest; only this module imports it). A plugin's
test file is a few lines::

    import pytest
    from torchx.schedulers.testing import AppBuilder, SchedulerConformance

    from acme_torchx.scheduler import create_scheduler


    class TestAcme(SchedulerConformance):
        @pytest.fixture
        def scheduler(self, tmp_path, monkeypatch):
            monkeypatch.setenv("ACME_BATCH_HOME", str(tmp_path / "batch"))
            return create_scheduler("kit")

        @pytest.fixture
        def cfg(self):                       # run options of every submit (default {})
            return {"queue": "kit"}

        @pytest.fixture
        def watched_paths(self, tmp_path):   # where the backend writes (dryrun: unchanged)
            return [tmp_path]

The class must be named ``Test*`` for pytest to collect it; ``SchedulerConformance``
itself is not collected. Every check is its own test (``pytest -k dryrun``, ...).

What a plugin provides (pytest fixtures, overridden by defining a method of the same
name with ``@pytest.fixture``; or class attributes):

``scheduler`` (fixture, required unless ``scheduler_factory`` is set)
    The Scheduler under test, talking to the real backend. Isolate it per test where
    the backend allows (a private state directory, a queue of its own).
``scheduler_factory`` (attribute, default None)
    The plugin's ``create_scheduler``: the ``scheduler`` fixture is then
    ``scheduler_factory("kit")``, for a backend that needs nothing more.
``job_dir_option`` (attribute, default None)
    The run option naming a batch backend's job directory (``"job_dir"``): the default
    ``cfg`` then gives every app the test's own (``tmp_path / "jobs"``), and the
    default ``watched_paths`` is ``[tmp_path]``.
``cfg`` (fixture, default ``{}``)
    The run options given to every dryrun and submit.
``app_builder`` (fixture, default ``AppBuilder()``)
    Makes the test apps runnable on the backend: see :class:`AppBuilder` (``sh -c``
    with the image ``/``; give a container image, a shared directory, a resource).
``watched_paths`` (fixture, default ``[]``; ``[tmp_path]`` with ``job_dir_option``)
    Directories the backend writes into: a dryrun must leave them unchanged.
``unknown_app_id`` (fixture, default ``"kit-unknown-<random>"``)
    An id of the backend's form that names no app (Slurm: a large number).
``missing`` (attribute, default: the scheduler's ``missing_capabilities``)
    What the backend lacks (:class:`~torchx.schedulers.capabilities.Capability` ->
    reason). Declare it on the Scheduler class so that the docs' capability table
    shows it; set it here only to override that.
``timeout`` (attribute, default 120 s), ``cancel_timeout`` (60 s), ``unknown_id_timeout`` (10 s)
    How long an app may take to end, to be CANCELLED after ``cancel``, and a call
    about an unknown app id may take.
``replicas`` (attribute, default 2, at least 2)
    N in the apps of N replicas (the backend must run two roles of N at once).
``wait_slack`` (attribute, default 5 s)
    How long a scheduler's own ``wait_for_change`` may overrun its timeout, and take
    to wake after a replica ended.

A plugin adapts the kit only through these: a test class that overrides one of the
kit's checks, or sets ``replicas`` below 2, fails those tests (a weakened check would
pass a scheduler that breaks the contract).

A test that depends on a declared-missing capability checks the documented behaviour
of lacking it instead (``LACKING`` in :mod:`~torchx.schedulers.capabilities`: a
``ValueError``, the option ignored, ...), never skips; a capability that fails
without being declared fails its test. Waits poll the backend with a deadline (or
follow a log to its end in a thread with a deadline): a broken backend fails a test,
it never hangs the suite.

Apps are submitted the way users submit them: through a :class:`~torchx.runner.Runner`
(which goes through ``Scheduler.prepare``, the one submit pipeline: strict run-option
checks, validation hooks, workspace), then followed with the scheduler's own calls.
Dry runs are checked both through the Runner and through ``Scheduler.prepare(...,
dryrun=True)``. Every app a test submits is cancelled and
deleted when the test ends.

A plugin's own extra tests can use the ``kit`` fixture (a :class:`Kit`):
``kit.run(kit.builder.role("main", [Out("hi"), Exit(0)]))`` submits an app and returns
its id, ``kit.wait_terminal(app_id)`` / ``kit.wait_running(app_id)`` poll ``describe``,
``kit.logs(app_id, role, k, **log_iter_kwargs)`` reads a log within the timeout,
``kit.lacks(Capability.X)`` tells what was declared missing.

A plugin's docstring examples run through two helpers, so that a module gaining or
losing examples is noticed (a listed module without examples would pass while testing
nothing)::

    @pytest.mark.parametrize("name", EXAMPLES)
    def test_examples(name):
        run_examples(name)

    def test_the_modules_with_examples_are_the_listed_ones():
        assert modules_with_examples("acme_torchx") == EXAMPLES

Helpers for a plugin's own tests, in modules of their own (none imported here):

* :mod:`torchx.schedulers.testing.cli`: :class:`~torchx.schedulers.testing.cli.TorchxCli`,
  the real ``torchx`` command in a private ``HOME``/``TORCHX_HOME``/working directory,
  every exit status checked, what a test started cancelled at its end; ``app_id`` and
  ``replicas`` of its answers;
* :mod:`torchx.schedulers.testing.fake_tools`:
  :class:`~torchx.schedulers.testing.fake_tools.FakeTools`, scripted stand-ins of a
  batch system's command-line tools for unit tests, and ``private_env_dir`` (a private
  ``XDG_CACHE_HOME`` for a test session);
* :mod:`torchx.schedulers.testing.rendezvous`: a standard-library program whose
  replicas meet over TCP at rank 0's host (run as a file on the backend's hosts), and
  ``Ports`` for its port;
* :mod:`torchx.schedulers.testing.registration`: ``entry_point(name)`` (what the
  ``torchx`` entry point names) and ``modules_after(code)`` (what a fresh interpreter
  has imported after ``code``), for the checks that a plugin is found and cheap to import.

The steps of the test apps (:data:`Step`): :class:`Out`, :class:`Err`, :class:`Sleep`,
:class:`Rank0Host`, :class:`Exit`, :class:`Env` (check a variable), :class:`Fail` (one
replica of several fails) and :class:`Tick` (output that grows until the replica is
stopped). An :class:`AppBuilder` that runs the steps its own way handles each of them.

The checks (test names):

* dryrun: ``test_dryrun_creates_nothing``, ``test_dryrun_request_is_printable``,
  ``test_dryrun_leaves_the_appdef_unchanged``, ``test_dryrun_rejects_an_unknown_run_option``,
  ``test_dryrun_rejects_a_mistyped_run_option``;
* running: ``test_submit_returns_an_id``, ``test_describe_gives_every_replica``,
  ``test_the_role_env_reaches_every_replica`` (each replica sees its role's ``env``, macros
  substituted), ``test_describe_gives_back_the_appdef`` (of two apps, each its own name,
  roles and metadata), ``test_an_app_that_exits_0_succeeds``,
  ``test_a_failing_replica_fails_the_app``,
  ``test_one_failing_replica_of_several_fails_the_app`` (FAILED; each replica with its
  own state and exit code), ``test_one_failing_replica_of_several_with_retries`` (FAILED
  after ``max_retries`` restarts), ``test_two_roles_of_n_replicas_with_macros``,
  ``test_concurrent_submits_get_distinct_ids``;
* logs: ``test_log_iter_every_line_in_order``, ``test_log_iter_stdout_and_stderr``,
  ``test_log_iter_combined``, ``test_log_iter_regex``,
  ``test_log_iter_should_tail_loses_nothing``, ``test_log_iter_since_until``;
* following: ``test_cancel_reaches_cancelled`` (within ``cancel_timeout``, and the
  replicas' output then stops growing), ``test_cancel_right_after_submit_is_not_lost``,
  ``test_cancel_is_idempotent``, ``test_unknown_app_id_is_a_fast_no_op``,
  ``test_list_has_every_app_with_its_state`` (two apps, RUNNING then CANCELLED),
  ``test_delete_removes_the_app``, ``test_retries_are_counted``.
"""

from __future__ import annotations

import concurrent.futures
import copy
import doctest
import importlib
import os
import pkgutil
import queue
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import pytest

from torchx.schedulers.api import DescribeAppResponse, Scheduler, Stream
from torchx.schedulers.capabilities import Capability, missing
from torchx.specs import (
    NONE,
    AppDef,
    AppDryRunInfo,
    AppState,
    CfgVal,
    InvalidRunConfigException,
    Resource,
    Role,
    macros,
)

__all__ = [
    "AppBuilder",
    "Capability",
    "Env",
    "Err",
    "Exit",
    "Fail",
    "Kit",
    "Out",
    "Rank0Host",
    "SchedulerConformance",
    "Sleep",
    "Step",
    "Tick",
    "modules_with_examples",
    "run_examples",
]

T = TypeVar("T")


# -- docstring examples ---------------------------------------------------------------------


def modules_with_examples(package: str) -> list[str]:
    """The modules of ``package`` (itself first, then the others sorted) whose docstrings
    hold examples: compared with a plugin's list of them, so none is forgotten."""
    top = importlib.import_module(package)
    names = [package]
    if hasattr(top, "__path__"):
        found = pkgutil.walk_packages(top.__path__, prefix=package + ".")
        names += sorted(m.name for m in found if not m.name.endswith("__main__"))
    finder = doctest.DocTestFinder()
    return [
        name
        for name in names
        if any(test.examples for test in finder.find(importlib.import_module(name)))
    ]


def run_examples(name: str) -> None:
    """Run the examples in module ``name``'s docstrings (``...`` matches anything); fail
    naming the module when none ran (a listed module lost its examples) or one failed."""
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name} has no examples: remove it from the list"
    assert result.failed == 0, f"{result.failed} example(s) failed in {name}"


# -- the test apps ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Out:
    """Print ``text`` and a newline to stdout (macros in it are substituted by the scheduler)."""

    text: str


@dataclass(frozen=True)
class Err:
    """Print ``text`` and a newline to stderr."""

    text: str


@dataclass(frozen=True)
class Sleep:
    """Sleep ``seconds`` (a replica that stays RUNNING meanwhile)."""

    seconds: float


@dataclass(frozen=True)
class Rank0Host:
    """Print ``rank0=<the rank-0 host>`` to stdout, read from the ``${rank0_env}`` variable.

    ``rank0=?<name>`` when the macro was not substituted to a variable name.
    """


@dataclass(frozen=True)
class Exit:
    """Exit with ``code`` (a replica that ends without one exits 0)."""

    code: int


@dataclass(frozen=True)
class Env:
    """Print ``name=<its value>``; exit with 9 if the value is not ``value``.

    Macros in ``value`` are substituted like those of the role's ``env``, so a replica
    whose environment lacks the role's ``env`` (or has it unsubstituted) fails, which
    is seen without logs.
    """

    name: str
    value: str


@dataclass(frozen=True)
class Fail:
    """Replica ``replica`` of the role sleeps ``after`` seconds, then exits with ``code``.

    Every other replica goes on with the next step: one replica of several fails, the
    others succeed first (``after`` lets them exit before it).
    """

    replica: int
    code: int
    after: float = 0.0


@dataclass(frozen=True)
class Tick:
    """Print ``tick <i>`` every ``interval`` seconds, forever (``i`` counts from 0).

    Output that keeps growing while the replica runs: once the app is cancelled, it
    must stop.
    """

    interval: float


#: One step of a kit app's program (:class:`AppBuilder` turns steps into arguments).
Step = Out | Err | Sleep | Rank0Host | Exit | Env | Fail | Tick

#: The program the default :class:`AppBuilder` runs with ``sh -c``: it reads its steps
#: from its arguments as pairs (``o TEXT``, ``e TEXT``, ``s SECONDS``, ``h VARNAME``,
#: ``x CODE``, ``v NAME=VALUE``, ``f ME:REPLICA:AFTER:CODE``, ``t INTERVAL``). POSIX sh
#: only; it holds no ``$$`` and no ``$name`` of a macro, so the scheduler's macro
#: substitution leaves it alone.
SH_PROGRAM = """\
while [ "$#" -gt 1 ]; do
  case "$1" in
    o) printf '%s\\n' "$2" ;;
    e) printf '%s\\n' "$2" >&2 ;;
    s) sleep "$2" ;;
    h) case "$2" in
         [A-Za-z_]*) eval "kit_v=\\${$2-}"; printf 'rank0=%s\\n' "$kit_v" ;;
         *) printf 'rank0=?%s\\n' "$2" ;;
       esac ;;
    x) exit "$2" ;;
    v) kit_n=${2%%=*}; kit_w=${2#*=}; eval "kit_v=\\${$kit_n-}"
       printf '%s=%s\\n' "$kit_n" "$kit_v"
       if [ "$kit_v" != "$kit_w" ]; then
         printf 'env %s is [%s], expected [%s]\\n' "$kit_n" "$kit_v" "$kit_w" >&2; exit 9
       fi ;;
    f) kit_f=$2; kit_me=${kit_f%%:*}; kit_f=${kit_f#*:}; kit_r=${kit_f%%:*}; kit_f=${kit_f#*:}
       if [ "$kit_me" = "$kit_r" ]; then sleep "${kit_f%%:*}"; exit "${kit_f#*:}"; fi ;;
    t) kit_i=0
       while :; do printf 'tick %s\\n' "$kit_i"; kit_i=$((kit_i + 1)); sleep "$2"; done ;;
  esac
  shift 2
done
"""


class AppBuilder:
    """Makes a role that runs a list of :data:`Step` s on the backend under test.

    The default runs ``SH_PROGRAM`` with ``<shell> -c`` in ``image`` (for the local
    scheduler and Slurm a directory: the replica's working directory; for a container
    backend an image that has ``sh``, e.g. ``AppBuilder(image="alpine:3.20")``).
    Override :meth:`role` to run the steps some other way (a Python entrypoint, a
    wrapper the backend needs); keep macros in the printed text substituted.

    Args:
        image: the role's image
        shell: the POSIX shell's path or name in that image
        resource: each role's resource (the backend may require one)
        env: extra environment of every role
    """

    def __init__(
        self,
        image: str = "/",
        shell: str = "sh",
        resource: Resource | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.image = image
        self.shell = shell
        self.resource = resource if resource is not None else Resource(cpu=1, gpu=0, memMB=256)
        self.env = dict(env or {})

    @staticmethod
    def step_args(steps: Sequence[Step]) -> list[str]:
        """The arguments of ``SH_PROGRAM`` for ``steps``."""
        args: list[str] = []
        for step in steps:
            if isinstance(step, Out):
                args += ["o", step.text]
            elif isinstance(step, Err):
                args += ["e", step.text]
            elif isinstance(step, Sleep):
                args += ["s", f"{step.seconds:g}"]
            elif isinstance(step, Rank0Host):
                args += ["h", macros.rank0_env]
            elif isinstance(step, Exit):
                args += ["x", str(step.code)]
            elif isinstance(step, Env):
                args += ["v", f"{step.name}={step.value}"]
            elif isinstance(step, Fail):
                args += ["f", f"{macros.replica_id}:{step.replica}:{step.after:g}:{step.code}"]
            else:
                args += ["t", f"{step.interval:g}"]
        return args

    def role(
        self, name: str, steps: Sequence[Step], num_replicas: int = 1, max_retries: int = 0
    ) -> Role:
        """A role of ``num_replicas`` replicas, each running ``steps``."""
        return Role(
            name,
            image=self.image,
            entrypoint=self.shell,
            args=["-c", SH_PROGRAM, "kit", *self.step_args(steps)],
            num_replicas=num_replicas,
            max_retries=max_retries,
            resource=copy.deepcopy(self.resource),
            env=dict(self.env),
        )

    def app(self, name: str, *roles: Role) -> AppDef:
        """An AppDef of ``roles``."""
        return AppDef(name, list(roles))


# -- the helper each test gets ---------------------------------------------------------------


def _in_thread(fn: Callable[[], T], timeout: float, what: str) -> T:
    """``fn()`` in a daemon thread; fails the test if it has not returned in ``timeout`` s.

    An exception of ``fn`` is raised here. A hung backend call fails its test (the
    thread is left behind, a daemon) instead of hanging the suite.
    """
    done: queue.Queue[tuple[bool, Any]] = queue.Queue()

    def run() -> None:
        try:
            done.put((True, fn()))
        except BaseException as e:  # handed to the test's thread
            done.put((False, e))

    threading.Thread(target=run, daemon=True, name=f"kit: {what}").start()
    try:
        ok, value = done.get(timeout=timeout)
    except queue.Empty:
        pytest.fail(f"{what} did not return within {timeout:g} s")
    if not ok:
        raise value
    result: T = value
    return result


class Kit:
    """What a conformance test uses: submit the way users do, wait, read logs, all bounded.

    Tracks every app it submitted; :meth:`cleanup` cancels and deletes them.
    """

    def __init__(
        self,
        scheduler: Scheduler[Any],
        cfg: Mapping[str, CfgVal],
        builder: AppBuilder,
        missing: Mapping[Capability, str],
        timeout: float,
    ) -> None:
        from torchx.runner import Runner

        self.scheduler = scheduler
        self.cfg = dict(cfg)
        self.builder = builder
        self.missing = dict(missing)
        self.timeout = timeout
        self.backend = scheduler.backend
        self.runner = Runner("kit", {self.backend: lambda *_a, **_k: scheduler})
        self.submitted: list[str] = []

    def lacks(self, capability: Capability) -> bool:
        """True if the backend declared ``capability`` missing."""
        return capability in self.missing

    # -- submitting ----------------------------------------------------------------------

    def dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal] | None = None) -> AppDryRunInfo[Any]:
        """``Runner.dryrun`` (``torchx run --dryrun``) with the kit's cfg (or ``cfg``)."""
        return self.runner.dryrun(app, self.backend, self.cfg if cfg is None else cfg)

    def prepare(self, app: AppDef, cfg: Mapping[str, CfgVal] | None = None) -> AppDryRunInfo[Any]:
        """``Scheduler.prepare(app, cfg, dryrun=True)``: the scheduler's own dry run."""
        return self.scheduler.prepare(app, self.cfg if cfg is None else cfg, dryrun=True)

    def submit(self, app: AppDef) -> str:
        """Runs ``app`` as ``Runner.run`` does; returns the app id (tracked for cleanup)."""
        from torchx.specs.handles import parse_app_handle

        handle = self.runner.run(app, self.backend, self.cfg)
        backend, _session, app_id = parse_app_handle(handle)
        assert backend == self.backend, f"handle {handle} names another scheduler"
        self.submitted.append(app_id)
        return app_id

    def run(self, *roles: Role, name: str = "kit") -> str:
        """Submits an app of ``roles``; returns its id."""
        return self.submit(self.builder.app(name, *roles))

    # -- waiting -------------------------------------------------------------------------

    def describe(self, app_id: str) -> DescribeAppResponse:
        """``describe(app_id)``, which must know the app."""
        desc = _in_thread(
            lambda: self.scheduler.describe(app_id), self.timeout, f"describe({app_id!r})"
        )
        assert desc is not None, f"describe({app_id!r}) returned None for a submitted app"
        return desc

    def wait_for(
        self, app_id: str, done: Callable[[DescribeAppResponse], bool], what: str, timeout: float
    ) -> DescribeAppResponse:
        """Polls ``describe`` until ``done(desc)``; fails at timeout.

        Between two polls it waits as ``Runner.wait`` does: with the scheduler's
        ``wait_for_change`` (at most 1 s) where it can, else a sleep of 0.05 s, doubling
        to 1 s.
        """
        deadline = time.monotonic() + timeout
        delay = 0.05
        desc = self.describe(app_id)
        while not done(desc):
            if time.monotonic() > deadline:
                pytest.fail(f"app {app_id} not {what} within {timeout:g} s; last: {desc}")
            if not self.wait_for_change(app_id, 1.0):
                time.sleep(delay)  # a poll interval: the backend offers no event to wait on
                delay = min(delay * 2, 1.0)
            desc = self.describe(app_id)
        return desc

    def wait_for_change(self, app_id: str, timeout: float) -> bool:
        """The scheduler's ``wait_for_change``, bounded (an error is False, as for the Runner)."""

        def wait() -> bool:
            try:
                return bool(self.scheduler.wait_for_change(app_id, timeout))
            except Exception:
                return False

        return _in_thread(wait, timeout + WAIT_SLACK, f"wait_for_change({app_id!r}, {timeout:g})")

    def wait_terminal(self, app_id: str) -> DescribeAppResponse:
        """The app's description once it is in a terminal state."""
        return self.wait_for(app_id, lambda d: d.state.is_terminal(), "ended", self.timeout)

    def wait_running(self, app_id: str) -> DescribeAppResponse:
        """The app's description once it is RUNNING (failing if it ended instead)."""
        desc = self.wait_for(
            app_id,
            lambda d: d.state == AppState.RUNNING or d.state.is_terminal(),
            "RUNNING",
            self.timeout,
        )
        assert desc.state == AppState.RUNNING, f"app {app_id} ended instead of running: {desc}"
        return desc

    # -- logs ----------------------------------------------------------------------------

    def logs(self, app_id: str, role: str, k: int = 0, **kwargs: Any) -> list[str]:
        """Every line of ``log_iter(app_id, role, k, **kwargs)``, read within the timeout."""
        return _in_thread(
            lambda: list(self.scheduler.log_iter(app_id, role, k, **kwargs)),
            self.timeout,
            f"log_iter({app_id!r}, {role!r}, {k}, {kwargs})",
        )

    def follow(self, app_id: str, role: str, k: int = 0, **kwargs: Any) -> queue.Queue[Any]:
        """Reads ``log_iter(..., should_tail=True)`` in a thread into a queue.

        Each line is put as it comes; then ``StopIteration`` (the iterator ended) or the
        exception it raised.
        """
        out: queue.Queue[Any] = queue.Queue()

        def run() -> None:
            try:
                for line in self.scheduler.log_iter(app_id, role, k, should_tail=True, **kwargs):
                    out.put(line)
                out.put(StopIteration())
            except BaseException as e:
                out.put(e)

        threading.Thread(target=run, daemon=True, name=f"kit: follow {app_id}").start()
        return out

    def next_line(self, lines: queue.Queue[Any]) -> str | BaseException:
        """The next item of :meth:`follow`'s queue, failing the test at the timeout."""
        try:
            item: str | BaseException = lines.get(timeout=self.timeout)
        except queue.Empty:
            pytest.fail(f"no log line nor end of the log within {self.timeout:g} s")
        return item

    # -- cleaning up ---------------------------------------------------------------------

    def cleanup(self) -> None:
        """Cancels, then deletes, every app this kit submitted (unknown ones are skipped)."""
        for app_id in self.submitted:
            if self.scheduler.describe(app_id) is None:
                continue
            self.scheduler.cancel(app_id)
            self.wait_terminal(app_id)
            self.scheduler.delete(app_id)


#: Seconds without a new line after which a replica's output counts as stopped (it
#: printed every 0.1 s while running).
QUIET = 1.5
#: Seconds a ``wait_for_change`` of :meth:`Kit.wait_for` may take beyond its timeout.
WAIT_SLACK = 10.0
#: Seconds after which the failing replica of the wait check exits.
WAIT_FAIL_AFTER = 3.0


def _check_not_weakened(cls: type, test: str, replicas: int) -> None:
    """Fails the test if its class changed the check or sized the apps below 2 replicas.

    A plugin adapts the kit through fixtures, :class:`AppBuilder` and declared
    capabilities; a check it overrides (or apps of one replica, where no replica can
    differ from another) would pass a scheduler the contract fails.
    """
    if replicas < 2:
        pytest.fail(
            f"{cls.__name__}.replicas is {replicas}: the kit needs apps of at least 2 "
            "replicas (set no value for the default 2, or a larger one)"
        )
    kit_check = getattr(SchedulerConformance, test, None)
    if kit_check is not None and getattr(cls, test) is not kit_check:
        pytest.fail(
            f"{cls.__name__}.{test} overrides a check of the conformance kit: a plugin may "
            "not change one; adapt the fixtures or the AppBuilder, or declare what the "
            "backend lacks (missing_capabilities)"
        )


def _role_fields(role: Role) -> tuple[Any, ...]:
    """What a described role must keep of the submitted one."""
    return (
        role.name,
        role.image,
        role.entrypoint,
        list(role.args),
        dict(role.env),
        role.num_replicas,
        role.max_retries,
    )


def _one_line(e: BaseException, *names: str) -> None:
    text = str(e)
    assert text.strip() and "\n" not in text.strip(), f"not one line: {text!r}"
    for name in names:
        assert name in text, f"the message does not name {name!r}: {text!r}"


def _wrong_value(opt_type: Any) -> CfgVal:
    """A value of another type than ``opt_type`` (a str for a number, a number for a str)."""
    return 12345 if opt_type is str else "not-a-valid-value"


def _is_subsequence(part: Sequence[str], whole: Sequence[str]) -> bool:
    it = iter(whole)
    return all(any(item == x for x in it) for item in part)


def _snapshot(paths: Iterable[Path]) -> dict[str, tuple[int, int]]:
    """Every file and directory under ``paths``: (size, mtime_ns), by path."""
    found: dict[str, tuple[int, int]] = {}
    for root in paths:
        root = Path(root)
        if not root.exists():
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            for name in [*dirnames, *filenames]:
                path = os.path.join(dirpath, name)
                try:
                    st = os.lstat(path)
                except FileNotFoundError:
                    continue
                found[path] = (st.st_size if name in filenames else 0, st.st_mtime_ns)
    return found


# -- the checks ------------------------------------------------------------------------------


class SchedulerConformance:
    """The conformance tests; subclass it as ``Test<Backend>`` (see the module docs)."""

    #: Capabilities the backend lacks, with reasons; None: the scheduler's declaration.
    missing: ClassVar[Mapping[Capability, str] | None] = None
    #: Seconds an app (or a call) may take to end.
    timeout: ClassVar[float] = 120.0
    #: Seconds from ``cancel`` to CANCELLED.
    cancel_timeout: ClassVar[float] = 60.0
    #: Seconds a call about an unknown app id may take.
    unknown_id_timeout: ClassVar[float] = 10.0
    #: The N of apps with N replicas.
    replicas: ClassVar[int] = 2
    #: Seconds a ``wait_for_change`` may take beyond its timeout, and after a replica's
    #: end before it wakes (schedulers that override it).
    wait_slack: ClassVar[float] = 5.0
    #: The plugin's ``create_scheduler(session_name)``: the default ``scheduler`` fixture.
    scheduler_factory: ClassVar[Callable[[str], Scheduler[Any]] | None] = None
    #: The run option naming the job directory: each test's own, watched by dryruns.
    job_dir_option: ClassVar[str | None] = None

    # -- what a plugin provides -------------------------------------------------------------

    @pytest.fixture
    def scheduler(self) -> Scheduler[Any]:
        # read from the class: a function stored on it is not bound to the instance
        factory = type(self).scheduler_factory
        if factory is None:
            pytest.fail(
                f"{type(self).__name__} must define the fixture 'scheduler' (the Scheduler "
                "under test) or the attribute 'scheduler_factory': see torchx.schedulers.testing"
            )
        return factory("kit")

    @pytest.fixture
    def cfg(self, tmp_path: Path) -> Mapping[str, CfgVal]:
        if self.job_dir_option is None:
            return {}
        return {self.job_dir_option: str(tmp_path / "jobs")}

    @pytest.fixture
    def app_builder(self) -> AppBuilder:
        return AppBuilder()

    @pytest.fixture
    def watched_paths(self, tmp_path: Path) -> Sequence[Path]:
        return [tmp_path] if self.job_dir_option is not None else []

    @pytest.fixture
    def unknown_app_id(self) -> str:
        return f"kit-unknown-{uuid.uuid4().hex[:10]}"

    @pytest.fixture
    def kit(
        self,
        request: pytest.FixtureRequest,
        scheduler: Scheduler[Any],
        cfg: Mapping[str, CfgVal],
        app_builder: AppBuilder,
    ) -> Iterator[Kit]:
        _check_not_weakened(type(self), request.function.__name__, self.replicas)
        lacking = missing(scheduler) if self.missing is None else dict(self.missing)
        kit = Kit(scheduler, cfg, app_builder, lacking, self.timeout)
        try:
            yield kit
        finally:
            kit.cleanup()

    # -- dryrun -----------------------------------------------------------------------------

    def test_dryrun_creates_nothing(self, kit: Kit, watched_paths: Sequence[Path]) -> None:
        app = kit.builder.app("kitdry", kit.builder.role("main", [Out("hi")], self.replicas))
        apps_before = self._app_ids(kit)
        files_before = _snapshot(watched_paths)
        for dryrun in (kit.dryrun, kit.prepare):
            info = dryrun(app)
            assert info.request is not None
            assert info.app is not None and info.app.name == "kitdry"
            assert _snapshot(watched_paths) == files_before, f"{dryrun.__name__} wrote files"
            assert self._app_ids(kit) == apps_before, f"{dryrun.__name__} created an app"

    def test_dryrun_request_is_printable(self, kit: Kit) -> None:
        app = kit.builder.app("kitprint", kit.builder.role("main", [Out("hi")]))
        info = kit.dryrun(app)
        text = str(info)
        assert text.strip(), "str() of the dryrun info is empty"
        assert "kitprint" in text, f"the printed request does not name the app:\n{text}"
        assert repr(info)

    def test_dryrun_leaves_the_appdef_unchanged(self, kit: Kit) -> None:
        role = kit.builder.role("main", [Out(f"{macros.app_id} {macros.replica_id}")], 2)
        role.env["KIT_VAR"] = f"id-{macros.replica_id}"
        role.metadata["kit"] = macros.app_id
        app = kit.builder.app("kitsame", role)
        app.metadata["owner"] = "kit"
        before = copy.deepcopy(app)
        kit.dryrun(app)
        assert app == before, "Runner.dryrun changed the caller's AppDef"
        kit.prepare(app)
        assert app == before, "Scheduler.prepare changed the caller's AppDef"
        kit.scheduler.submit_dryrun(app, kit.scheduler.run_opts().resolve(kit.cfg))
        assert app == before, "Scheduler.submit_dryrun changed the caller's AppDef"

    def test_dryrun_rejects_an_unknown_run_option(self, kit: Kit) -> None:
        app = kit.builder.app("kitopt", kit.builder.role("main", [Out("hi")]))
        for dryrun in (kit.dryrun, kit.prepare):
            with pytest.raises(InvalidRunConfigException) as e:
                dryrun(app, {**kit.cfg, "kit_no_such_option": "x"})
            _one_line(e.value, "kit_no_such_option")

    def test_dryrun_rejects_a_mistyped_run_option(self, kit: Kit) -> None:
        app = kit.builder.app("kitopt", kit.builder.role("main", [Out("hi")]))
        opts = list(kit.scheduler.run_opts())
        if not opts:  # nothing to mistype: any option is then an unknown one
            with pytest.raises(InvalidRunConfigException):
                kit.dryrun(app, {"kit_no_such_option": 1})
            return
        for name, opt in opts:
            for dryrun in (kit.dryrun, kit.prepare):
                with pytest.raises(InvalidRunConfigException) as e:
                    dryrun(app, {**kit.cfg, name: _wrong_value(opt.opt_type)})
                _one_line(e.value, name)

    # -- running ----------------------------------------------------------------------------

    def test_submit_returns_an_id(self, kit: Kit) -> None:
        app_id = kit.run(kit.builder.role("main", [Out("hi")]))
        assert isinstance(app_id, str) and app_id.strip()
        assert kit.describe(app_id).app_id == app_id
        assert kit.scheduler.exists(app_id)

    def test_describe_gives_every_replica(self, kit: Kit) -> None:
        n = self.replicas
        app_id = kit.run(kit.builder.role("main", [Out("hi")], n))
        desc = kit.wait_terminal(app_id)
        assert desc.state == AppState.SUCCEEDED, desc
        (role,) = desc.roles_statuses
        assert role.role == "main"
        assert sorted(r.id for r in role.replicas) == list(range(n)), role
        for rep in role.replicas:
            assert rep.state == AppState.SUCCEEDED, rep
            assert rep.role == "main"
            expected = None if kit.lacks(Capability.EXIT_CODES) else 0
            assert rep.exit_code == expected, rep

    def test_the_role_env_reaches_every_replica(self, kit: Kit) -> None:
        n = self.replicas
        role = kit.builder.role(
            "main",
            [Env("KIT_ENV", "kit value"), Env("KIT_ENV_REPLICA", f"r-{macros.replica_id}")],
            n,
        )
        role.env.update({"KIT_ENV": "kit value", "KIT_ENV_REPLICA": f"r-{macros.replica_id}"})
        app_id = kit.submit(kit.builder.app("kitenv", role))
        desc = kit.wait_terminal(app_id)
        # a replica exits 9 when a variable of the role's env is missing or wrong
        assert desc.state == AppState.SUCCEEDED, f"the role's env did not reach a replica: {desc}"
        if kit.lacks(Capability.LOGS):
            return
        for k in range(n):
            lines = kit.logs(app_id, "main", k, streams=self._stdout(kit))
            assert lines == ["KIT_ENV=kit value\n", f"KIT_ENV_REPLICA=r-{k}\n"], lines

    def test_describe_gives_back_the_appdef(self, kit: Kit) -> None:
        apps = []
        for name, role_name, n in [("kitfirst", "alpha", 1), ("kitsecond", "beta", self.replicas)]:
            role = kit.builder.role(role_name, [Out(name)], n)
            role.env["KIT_APP"] = name
            app = kit.builder.app(name, role)
            app.metadata["kit"] = name
            apps.append((kit.submit(app), app))
        for app_id, app in apps:
            desc = kit.describe(app_id)
            if kit.lacks(Capability.DESCRIBE_APPDEF):
                assert desc.roles == [], desc
                assert desc.name.startswith(app.name), (
                    f"describe({app_id!r}).name is {desc.name!r}: neither app {app.name!r}'s "
                    "name nor a job name made from it"
                )
                continue
            assert desc.name == app.name, f"describe({app_id!r}) names the app {desc.name!r}"
            got = [_role_fields(r) for r in desc.roles]
            assert got == [_role_fields(r) for r in app.roles], (
                f"describe({app_id!r}) gives roles {got}, not those of app {app.name!r}"
            )
            assert desc.metadata.get("kit") == app.name, desc.metadata

    def test_an_app_that_exits_0_succeeds(self, kit: Kit) -> None:
        app_id = kit.run(kit.builder.role("main", [Out("hi"), Exit(0)]))
        assert kit.wait_terminal(app_id).state == AppState.SUCCEEDED

    def test_a_failing_replica_fails_the_app(self, kit: Kit) -> None:
        app_id = kit.run(kit.builder.role("bad", [Err("failing"), Exit(3)]))
        desc = kit.wait_terminal(app_id)
        assert desc.state == AppState.FAILED, desc
        (role,) = desc.roles_statuses
        (rep,) = role.replicas
        assert rep.state == AppState.FAILED, rep
        assert rep.exit_code == (None if kit.lacks(Capability.EXIT_CODES) else 3), rep
        assert desc.msg and desc.msg != NONE, f"no message says why app {app_id} failed"

    def test_one_failing_replica_of_several_fails_the_app(self, kit: Kit) -> None:
        # the last replica fails once the others have exited 0: each keeps its own exit
        n = self.replicas
        steps: list[Step] = [Out(f"replica {macros.replica_id}"), Fail(n - 1, 7, after=2)]
        app_id = kit.run(kit.builder.role("main", steps, n))
        desc = kit.wait_terminal(app_id)
        assert desc.state == AppState.FAILED, f"one replica of {n} failed, yet: {desc}"
        assert desc.msg and desc.msg != NONE, f"no message says why app {app_id} failed"
        self._check_exits(kit, desc, {k: 0 for k in range(n - 1)} | {n - 1: 7})

    def test_one_failing_replica_of_several_with_retries(self, kit: Kit) -> None:
        n = self.replicas
        steps: list[Step] = [Out(f"replica {macros.replica_id}"), Fail(n - 1, 7, after=1)]
        app_id = kit.run(kit.builder.role("main", steps, n, max_retries=1))
        desc = kit.wait_terminal(app_id)
        assert desc.state == AppState.FAILED, f"a replica failed on every attempt, yet: {desc}"
        if kit.lacks(Capability.RETRIES):
            assert desc.num_restarts <= 0, desc
        else:
            assert desc.num_restarts == 1, desc
        if kit.lacks(Capability.LAST_ATTEMPT_STATUS) and not kit.lacks(Capability.RETRIES):
            (role,) = desc.roles_statuses
            assert sorted(rep.id for rep in role.replicas) == list(range(n)), role
            for rep in role.replicas:
                assert rep.state == desc.state and rep.exit_code is None, (desc.state, rep)
            return
        self._check_exits(kit, desc, {n - 1: 7})

    def test_two_roles_of_n_replicas_with_macros(self, kit: Kit) -> None:
        n = self.replicas
        roles = [
            kit.builder.role(name, [Out(f"{name} replica={macros.replica_id}"), Rank0Host()], n)
            for name in ("alpha", "beta")
        ]
        app_id = kit.run(*roles)
        desc = kit.wait_terminal(app_id)
        assert desc.state == AppState.SUCCEEDED, desc
        by_role = {r.role: sorted(rep.id for rep in r.replicas) for r in desc.roles_statuses}
        assert by_role == {"alpha": list(range(n)), "beta": list(range(n))}
        if kit.lacks(Capability.LOGS):
            with pytest.raises(NotImplementedError):
                kit.logs(app_id, "alpha", 0)
            return
        for name in ("alpha", "beta"):
            hosts = set()
            for k in range(n):
                lines = kit.logs(app_id, name, k)
                assert lines[0] == f"{name} replica={k}\n", lines
                assert lines[1].startswith("rank0="), lines
                hosts.add(lines[1])
            (host,) = hosts  # every replica of a role sees the same rank-0 host
            if kit.lacks(Capability.RANK0_ENV):
                assert host == f"rank0=?{macros.rank0_env}\n"
            else:
                value = host.removeprefix("rank0=").strip()
                assert value and "$" not in value and not value.startswith("?"), host

    def test_concurrent_submits_get_distinct_ids(self, kit: Kit) -> None:
        app = kit.builder.app("kitsame", kit.builder.role("main", [Out("hi")]))
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            futures = [pool.submit(kit.submit, copy.deepcopy(app)) for _ in range(4)]
            ids = [f.result(timeout=self.timeout) for f in futures]
        assert len(set(ids)) == 4, ids
        for app_id in ids:
            assert kit.describe(app_id).app_id == app_id

    # -- logs -------------------------------------------------------------------------------

    def test_log_iter_every_line_in_order(self, kit: Kit) -> None:
        n = self.replicas
        texts = [f"line {i} of replica {macros.replica_id}" for i in range(200)]
        texts += ["  spaces kept  ", "unicode: \u00fc\u00f1\u00ee \u2713", "x" * 5000]
        app_id = kit.run(kit.builder.role("main", [Out(t) for t in texts], n))
        kit.wait_terminal(app_id)
        for k in range(n):
            if kit.lacks(Capability.LOGS):
                with pytest.raises(NotImplementedError):
                    kit.logs(app_id, "main", k)
                continue
            expected = [t.replace(macros.replica_id, str(k)) + "\n" for t in texts]
            assert kit.logs(app_id, "main", k) == expected

    def test_log_iter_stdout_and_stderr(self, kit: Kit) -> None:
        steps: list[Step] = [Out("out 1"), Err("err 1"), Out("out 2"), Err("err 2")]
        app_id = kit.run(kit.builder.role("main", steps))
        kit.wait_terminal(app_id)
        for stream, expected in [
            (Stream.STDOUT, ["out 1\n", "out 2\n"]),
            (Stream.STDERR, ["err 1\n", "err 2\n"]),
        ]:
            if kit.lacks(Capability.LOGS):
                with pytest.raises(NotImplementedError):
                    kit.logs(app_id, "main", streams=stream)
            elif kit.lacks(Capability.SEPARATE_STREAMS):
                with pytest.raises(ValueError):
                    kit.logs(app_id, "main", streams=stream)
            else:
                assert kit.logs(app_id, "main", streams=stream) == expected

    def test_log_iter_combined(self, kit: Kit) -> None:
        steps: list[Step] = [Out("out 1"), Err("err 1"), Out("out 2"), Err("err 2")]
        app_id = kit.run(kit.builder.role("main", steps))
        kit.wait_terminal(app_id)
        if kit.lacks(Capability.LOGS):
            with pytest.raises(NotImplementedError):
                kit.logs(app_id, "main", streams=Stream.COMBINED)
        elif kit.lacks(Capability.COMBINED_STREAM):
            with pytest.raises(ValueError):
                kit.logs(app_id, "main", streams=Stream.COMBINED)
        else:
            lines = kit.logs(app_id, "main", streams=Stream.COMBINED)
            assert sorted(lines) == ["err 1\n", "err 2\n", "out 1\n", "out 2\n"], lines
            assert _is_subsequence(["out 1\n", "out 2\n"], lines), lines
            assert _is_subsequence(["err 1\n", "err 2\n"], lines), lines

    def test_log_iter_regex(self, kit: Kit) -> None:
        steps: list[Step] = [Out("keep 1"), Out("drop 2"), Out("keep 3"), Out("drop keep 4")]
        app_id = kit.run(kit.builder.role("main", steps))
        kit.wait_terminal(app_id)
        if kit.lacks(Capability.LOGS):
            with pytest.raises(NotImplementedError):
                kit.logs(app_id, "main", regex="^keep")
            return
        assert kit.logs(app_id, "main", regex="^keep") == ["keep 1\n", "keep 3\n"]
        assert kit.logs(app_id, "main", regex=re.escape("keep 4")) == ["drop keep 4\n"]

    def test_log_iter_should_tail_loses_nothing(self, kit: Kit) -> None:
        first = [f"before {i}" for i in range(50)]
        second = [f"after {i}" for i in range(50)]
        steps: list[Step] = [*map(Out, first), Sleep(1.5), *map(Out, second), Exit(0)]
        app_id = kit.run(kit.builder.role("main", steps))
        if kit.lacks(Capability.LOGS):
            with pytest.raises(NotImplementedError):
                kit.logs(app_id, "main", should_tail=True)
            return
        lines = kit.follow(app_id, "main")  # from right after submit, while it runs
        got: list[str] = []
        while not isinstance(item := kit.next_line(lines), BaseException):
            got.append(item)
        if not isinstance(item, StopIteration):
            raise item
        assert got == [f"{t}\n" for t in [*first, *second]]
        state = kit.describe(app_id).state
        assert state.is_terminal(), f"the followed log ended while the app was {state.name}"
        # following an app that has ended gives its whole log, then ends
        assert kit.logs(app_id, "main", should_tail=True) == got

    def test_log_iter_since_until(self, kit: Kit) -> None:
        app_id = kit.run(kit.builder.role("main", [Out("early"), Sleep(3), Out("late")]))
        if kit.lacks(Capability.LOGS):
            with pytest.raises(NotImplementedError):
                kit.logs(app_id, "main", since=datetime.now(UTC))
            return
        lines = kit.follow(app_id, "main")
        assert kit.next_line(lines) == "early\n"
        # "early" was written before it was read; "late" comes 3 s after it was written
        between = datetime.now(UTC)
        kit.wait_terminal(app_id)
        since = kit.logs(app_id, "main", since=between)
        until = kit.logs(app_id, "main", until=between)
        if kit.lacks(Capability.LOG_TIME_WINDOW):
            assert since == until == ["early\n", "late\n"], (since, until)
        else:
            assert since == ["late\n"]
            assert until == ["early\n"]

    # -- following --------------------------------------------------------------------------

    def test_cancel_reaches_cancelled(self, kit: Kit) -> None:
        n = self.replicas
        app_id = kit.run(kit.builder.role("main", [Out("started"), Tick(0.1)], n))
        kit.wait_running(app_id)
        if not kit.lacks(Capability.LOGS):
            for k in range(n):  # the output grows while the app runs
                self._wait_log(kit, app_id, k, lambda lines: "tick 2\n" in lines, "ticking")
        started = time.monotonic()
        kit.scheduler.cancel(app_id)
        desc = kit.wait_for(
            app_id, lambda d: d.state.is_terminal(), "CANCELLED", self.cancel_timeout
        )
        assert desc.state == AppState.CANCELLED, desc
        assert time.monotonic() - started < self.cancel_timeout
        if kit.lacks(Capability.LOGS):
            with pytest.raises(NotImplementedError):
                kit.logs(app_id, "main", 0)
            return
        # CANCELLED means stopped: each replica's output stops growing (within the bound)
        for k in range(n):
            self._wait_quiet(kit, app_id, k, deadline=started + self.cancel_timeout)

    def test_cancel_right_after_submit_is_not_lost(self, kit: Kit) -> None:
        # cancelled while the app may still be SUBMITTED or PENDING: it must not run on
        steps: list[Step] = [Sleep(5), Out("ran to the end"), Exit(0)]
        app_id = kit.run(kit.builder.role("main", steps, self.replicas))
        kit.scheduler.cancel(app_id)
        desc = kit.wait_for(
            app_id, lambda d: d.state.is_terminal(), "CANCELLED", self.cancel_timeout
        )
        assert desc.state == AppState.CANCELLED, f"the cancel right after submit was lost: {desc}"

    def test_cancel_is_idempotent(self, kit: Kit) -> None:
        app_id = kit.run(kit.builder.role("main", [Sleep(600)]))
        kit.wait_running(app_id)
        kit.scheduler.cancel(app_id)
        kit.scheduler.cancel(app_id)  # while it is stopping
        kit.wait_for(app_id, lambda d: d.state.is_terminal(), "CANCELLED", self.cancel_timeout)
        kit.scheduler.cancel(app_id)  # once it has ended
        assert kit.describe(app_id).state == AppState.CANCELLED

        done = kit.run(kit.builder.role("main", [Exit(0)]))
        assert kit.wait_terminal(done).state == AppState.SUCCEEDED
        kit.scheduler.cancel(done)  # an ended app stays as it ended
        assert kit.describe(done).state == AppState.SUCCEEDED

    def test_unknown_app_id_is_a_fast_no_op(self, kit: Kit, unknown_app_id: str) -> None:
        sched = kit.scheduler
        limit = self.unknown_id_timeout
        started = time.monotonic()
        assert _in_thread(lambda: sched.describe(unknown_app_id), limit, "describe") is None
        assert _in_thread(lambda: sched.exists(unknown_app_id), limit, "exists") is False
        _in_thread(lambda: sched.cancel(unknown_app_id), limit, "cancel")
        _in_thread(lambda: sched.delete(unknown_app_id), limit, "delete")
        assert time.monotonic() - started < limit

    def test_list_has_every_app_with_its_state(self, kit: Kit) -> None:
        app_ids = [kit.run(kit.builder.role("main", [Sleep(600)])) for _ in range(2)]
        for app_id in app_ids:
            kit.wait_running(app_id)
        if kit.lacks(Capability.LIST):
            with pytest.raises(NotImplementedError):
                kit.scheduler.list(kit.cfg)
            return
        assert self._listed(kit, app_ids) == [AppState.RUNNING] * 2
        for app_id in app_ids:
            kit.scheduler.cancel(app_id)
        for app_id in app_ids:
            kit.wait_for(app_id, lambda d: d.state.is_terminal(), "CANCELLED", self.cancel_timeout)
        assert self._listed(kit, app_ids) == [AppState.CANCELLED] * 2

    def test_delete_removes_the_app(self, kit: Kit) -> None:
        app_id = kit.run(kit.builder.role("main", [Out("hi")]))
        kit.wait_terminal(app_id)
        kit.scheduler.delete(app_id)
        if kit.lacks(Capability.DELETE):
            assert kit.describe(app_id).state.is_terminal()
            return
        assert kit.scheduler.describe(app_id) is None
        assert not kit.scheduler.exists(app_id)
        if not kit.lacks(Capability.LIST):
            assert app_id not in (self._app_ids(kit) or set())

    def test_wait_for_change_is_bounded_and_wakes_at_the_end(self, kit: Kit) -> None:
        """``wait_for_change`` (optional) never waits past its timeout, nor through the end.

        A scheduler that keeps the default returns False at once. One that overrides it:
        one replica of N fails a few seconds in (the others sleep); a wait of 0.5 s while
        the app runs returns within its bound (plus ``wait_slack``), and waits of a minute
        each, with ``describe`` after each, see the app FAILED within ``wait_slack`` of
        that failure.
        """
        sched = kit.scheduler
        slack = self.wait_slack
        if type(sched).wait_for_change is Scheduler.wait_for_change:  # the default
            woke = _in_thread(lambda: sched.wait_for_change("kit-app", 60), slack, "a wait")
            assert woke is False, "the default wait_for_change must return False at once"
            return
        n = self.replicas
        steps: list[Step] = [Fail(n - 1, 5, after=WAIT_FAIL_AFTER), Sleep(600)]
        app_id = kit.run(kit.builder.role("main", steps, n))
        kit.wait_running(app_id)
        started = time.monotonic()
        _in_thread(lambda: sched.wait_for_change(app_id, 0.5), 0.5 + slack, "a wait of 0.5 s")
        deadline = started + WAIT_FAIL_AFTER + slack
        desc = kit.describe(app_id)
        while not desc.state.is_terminal():
            left = deadline - time.monotonic()
            if left <= 0:
                pytest.fail(f"app {app_id} not seen ending through wait_for_change; last: {desc}")
            t0 = time.monotonic()
            woke = _in_thread(
                lambda: sched.wait_for_change(app_id, 60.0),
                left,
                "wait_for_change(60 s) while a replica fails",
            )
            if not woke:
                assert time.monotonic() - t0 < slack, "wait_for_change returned False late"
                time.sleep(0.1)
            desc = kit.describe(app_id)
        assert desc.state == AppState.FAILED, desc

    def test_retries_are_counted(self, kit: Kit) -> None:
        app_id = kit.run(kit.builder.role("main", [Out("attempt"), Exit(3)], max_retries=2))
        desc = kit.wait_terminal(app_id)
        assert desc.state == AppState.FAILED, desc
        if kit.lacks(Capability.RETRIES):
            assert desc.num_restarts <= 0, desc
        else:
            assert desc.num_restarts == 2, desc

    # -- helpers ----------------------------------------------------------------------------

    def _app_ids(self, kit: Kit) -> set[str] | None:
        """The ids ``list()`` gives (None when the backend lacks ``list``)."""
        if kit.lacks(Capability.LIST):
            return None
        return {a.app_id for a in _in_thread(lambda: kit.scheduler.list(kit.cfg), 60, "list")}

    def _listed(self, kit: Kit, app_ids: Sequence[str]) -> list[AppState]:
        """The state ``list()`` gives each of ``app_ids`` (each must be there once)."""
        listed = _in_thread(lambda: kit.scheduler.list(kit.cfg), self.timeout, "list")
        found = []
        for app_id in app_ids:
            states = [a.state for a in listed if a.app_id == app_id]
            assert len(states) == 1, f"list() has app {app_id} {len(states)} times: {listed}"
            found.append(states[0])
        return found

    @staticmethod
    def _stdout(kit: Kit) -> Stream | None:
        """The stream to read a replica's stdout from (both, on a backend that has one log)."""
        return None if kit.lacks(Capability.SEPARATE_STREAMS) else Stream.STDOUT

    def _check_exits(self, kit: Kit, desc: DescribeAppResponse, exits: Mapping[int, int]) -> None:
        """Replica k of the one role ended as exit code ``exits[k]`` says, with that code.

        Without per-replica status (``Capability.REPLICA_STATUS``), each replica is in
        the app's state instead, with no exit code.
        """
        (role,) = desc.roles_statuses
        by_id = {rep.id: rep for rep in role.replicas}
        assert sorted(by_id) == list(range(self.replicas)), role
        if kit.lacks(Capability.REPLICA_STATUS):
            for rep in role.replicas:
                assert rep.state == desc.state and rep.exit_code is None, (desc.state, rep)
            return
        for k, code in exits.items():
            rep = by_id[k]
            assert rep.state == (AppState.SUCCEEDED if code == 0 else AppState.FAILED), rep
            expected = None if kit.lacks(Capability.EXIT_CODES) else code
            assert rep.exit_code == expected, f"replica {k} exited with {code}, yet: {rep}"

    def _wait_log(
        self, kit: Kit, app_id: str, k: int, done: Callable[[list[str]], bool], what: str
    ) -> list[str]:
        """Reads replica k's log of role ``main`` (0.1 s apart) until ``done(lines)``."""
        deadline = time.monotonic() + self.timeout
        while not done(lines := kit.logs(app_id, "main", k)):
            if time.monotonic() > deadline:
                pytest.fail(
                    f"replica main/{k} of app {app_id} not {what} within "
                    f"{self.timeout:g} s; its log: {lines[-5:]}"
                )
            time.sleep(0.1)  # a poll interval: output comes with no event to wait on
        return lines

    def _wait_quiet(self, kit: Kit, app_id: str, k: int, deadline: float) -> None:
        """Fails unless replica k's log stops growing (no new line for 1.5 s) by ``deadline``.

        A replica that still runs prints a tick every 0.1 s: 1.5 s without one means
        it has stopped.
        """
        lines = kit.logs(app_id, "main", k)
        quiet_since = time.monotonic()
        while time.monotonic() - quiet_since < QUIET:
            if time.monotonic() > deadline:
                pytest.fail(
                    f"app {app_id} is CANCELLED, yet replica main/{k} still prints: its log "
                    f"has {len(lines)} lines and grows; last: {lines[-1:]}"
                )
            time.sleep(0.25)  # a poll interval: we wait for output *not* to come
            now = kit.logs(app_id, "main", k)
            if now != lines:
                lines, quiet_since = now, time.monotonic()

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
    What the backend lacks (:class:`~torchx.schedulers.contract.capabilities.Capability` ->
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
of lacking it instead (``LACKING`` in :mod:`~torchx.schedulers.contract.capabilities`: a
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

A plugin's docstring examples run through :class:`DocstringExamples`, so that a module
gaining or losing examples is noticed (a listed module without examples would pass
while testing nothing); its ``tests/test_doctests.py`` is::

    class TestExamples(DocstringExamples):
        package = "acme_torchx"
        modules = ["acme_torchx.batch"]

(``run_examples(name)`` and ``modules_with_examples(package)`` are its two checks as
functions.) How the plugin is found and what importing it costs is checked the same
way, by :class:`~torchx.schedulers.testing.registration.PluginRegistration`.

Where the kit lives, to read it: :mod:`~torchx.schedulers.testing.conformance` (the
class above and its fixtures), :mod:`~torchx.schedulers.testing.checks` (the checks,
one module per part of the contract), :mod:`~torchx.schedulers.testing.kit` (the
:class:`Kit`), :mod:`~torchx.schedulers.testing.apps` (the steps and the
:class:`AppBuilder`), :mod:`~torchx.schedulers.testing.examples` (docstring examples).

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
* :mod:`torchx.schedulers.testing.registration`: ``PluginRegistration`` (the tests that
  a plugin is found and cheap to import), ``entry_point(name)`` (what the ``torchx``
  entry point names) and ``modules_after(code)`` (what a fresh interpreter has imported
  after ``code``).

The steps of the test apps (:data:`Step`): :class:`Out`, :class:`Err`, :class:`Sleep`,
:class:`Rank0Host`, :class:`Exit`, :class:`Env` (check a variable), :class:`Fail` (one
replica of several fails), :class:`Tick` (output that grows until the replica is
stopped) and :class:`ExitOnTerm` (a replica that exits with a given code, 0 say, when
asked to stop). An :class:`AppBuilder` that runs the steps its own way handles each of them.

The checks (test names):

* dryrun: ``test_dryrun_creates_nothing``, ``test_dryrun_request_is_printable``,
  ``test_dryrun_leaves_the_appdef_unchanged``, ``test_dryrun_rejects_an_unknown_run_option``,
  ``test_dryrun_rejects_a_mistyped_run_option``;
* running: ``test_submit_returns_an_id``, ``test_describe_gives_every_replica``,
  ``test_the_role_env_reaches_every_replica`` (each replica sees its role's ``env``, macros
  substituted), ``test_describe_gives_back_the_appdef`` (of two apps, each its own name,
  roles and metadata), ``test_describe_gives_back_the_run_options`` (those the kit gave,
  and a secret-looking variable of the scheduler's env option, where it has one, masked),
  ``test_an_app_that_exits_0_succeeds``,
  ``test_a_failing_replica_fails_the_app``,
  ``test_one_failing_replica_of_several_fails_the_app`` (FAILED; each replica with its
  own state and exit code), ``test_one_failing_replica_of_several_with_retries`` (FAILED
  after ``max_retries`` restarts), ``test_two_roles_of_n_replicas_with_macros``,
  ``test_concurrent_submits_get_distinct_ids``;
* logs: ``test_log_iter_every_line_in_order``, ``test_log_iter_stdout_and_stderr``,
  ``test_log_iter_combined``, ``test_log_iter_regex``,
  ``test_log_iter_should_tail_loses_nothing``, ``test_log_iter_since_until``;
* following: ``test_cancel_reaches_cancelled`` (within ``cancel_timeout``, and the
  replicas' output then stops growing), ``test_cancel_is_cancelled_when_replicas_exit_0``
  (replicas that exit 0 on SIGTERM: the app still CANCELLED, in ``list`` too),
  ``test_cancel_right_after_submit_is_not_lost``,
  ``test_cancel_is_idempotent``, ``test_unknown_app_id_is_a_fast_no_op``,
  ``test_list_has_every_app_with_its_state`` (two apps, RUNNING then CANCELLED),
  ``test_delete_removes_the_app``, ``test_retries_are_counted``.
"""

from __future__ import annotations

from torchx.schedulers.contract.capabilities import Capability
from torchx.schedulers.testing.apps import (
    AppBuilder,
    Env,
    Err,
    Exit,
    ExitOnTerm,
    Fail,
    Out,
    Rank0Host,
    Sleep,
    Step,
    Tick,
)
from torchx.schedulers.testing.conformance import SchedulerConformance
from torchx.schedulers.testing.examples import (
    DocstringExamples,
    modules_with_examples,
    run_examples,
)
from torchx.schedulers.testing.kit import Kit

__all__ = [
    "AppBuilder",
    "Capability",
    "DocstringExamples",
    "Env",
    "Err",
    "Exit",
    "ExitOnTerm",
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

"""The built-in local scheduler: apps as processes on this machine, one module per job.

:mod:`.scheduler` holds :class:`~torchx.schedulers.local.scheduler.LocalScheduler`, which
ties the modules below to the Scheduler contract (upstream's name for it,
``torchx.schedulers.local_scheduler``, still imports it). It is the example of a whole
scheduler built on the contract (:mod:`torchx.schedulers.contract`) and the helpers
(:mod:`torchx.schedulers.helpers`); nothing else in TorchX imports these modules, except
the ``torchx`` command, which answers local apps' ``status``, ``list`` and ``log`` from
:mod:`.view` and starts the next supervisor early with :mod:`.warmup`.

In the launching process:

* :mod:`.options`: the run options, declared once (``LocalOpts``, the scheduler's
  ``opts_class``), and their values checked;
* ``request``: the dry run: an AppDef turned into the processes to start;
* ``checks``: what is refused at dryrun (apps local cannot run);
* ``launch``: ``schedule``: the app's directory, then its supervisor started;
* ``writing``: the records a launch writes (log directory, request, AppDef);
* :mod:`.warmup`: a supervisor started ahead of the next app.

In any later process:

* ``records``: finding an app's records, checking they can be trusted,
  reading and settling its state (shared by the scheduler and the view);
* ``reading``: the record shared by followers, the AppDef, ``describe``;
* :mod:`.view`: the attrs-free read-only view the ``torchx`` command answers
  ``status``, ``list`` and ``log`` with;
* ``logs``: the log index the supervisor writes, and reading and tailing the
  logs (the combined view is built at read time);
* ``control``: ``cancel`` and ``delete``;
* ``retention``: removing finished apps (delete, prune by age or count).

In the detached per-app processes:

* ``boot``: the first steps of the supervisor, before its imports;
* ``supervisor``: the supervisor's main loop, retry policy and state record;
* ``replicas``: its replicas as processes (start, signals, exits);
* ``diskspace``: its guard against a full disk;
* ``upkeep``: the AppDef's JSON record and the retention, after the fact;
* ``watchdog``: the process that outlives the supervisor to clean up;
* ``cgroup``: an app's own cgroup, where available (the ``cgroup`` option);
* ``state``: where records live, versioned JSON records, per-app locks,
  process liveness and the "kill what is left of an app" sweep.

Public here: ``LocalScheduler`` and ``create_scheduler`` (:mod:`.scheduler`), the view and
the warm start; the other modules are the local scheduler's own, not API (what other
schedulers can share is in :mod:`torchx.schedulers.helpers`). The layout of the records
is versioned (``apiVersion``).
"""

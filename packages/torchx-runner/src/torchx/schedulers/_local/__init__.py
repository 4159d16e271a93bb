"""The local scheduler's own folder: one module per job (see :mod:`torchx.schedulers.local_scheduler`).

:class:`~torchx.schedulers.local_scheduler.LocalScheduler` (imported, as upstream, from
``torchx.schedulers.local_scheduler``) ties these to the Scheduler contract.

In the launching process:

* :mod:`._local.options`: the run options, and their values checked;
* :mod:`._local.request`: the dry run: an AppDef turned into the processes to start;
* :mod:`._local.checks`: what is refused at dryrun (apps local cannot run);
* :mod:`._local.launch`: ``schedule``: the app's directory, then its supervisor started;
* :mod:`._local.writing`: the records a launch writes (log directory, request, AppDef);
* :mod:`._local.warmup`: a supervisor started ahead of the next app
  (``torchx.schedulers.local_warmup``).

In any later process:

* :mod:`._local.records`: finding an app's records, checking they can be trusted,
  reading and settling its state (shared by the scheduler and the view);
* :mod:`._local.reading`: the record shared by followers, the AppDef, ``describe``;
* :mod:`._local.view`: the attrs-free read-only view the ``torchx`` command answers
  ``status``, ``list`` and ``log`` with (``torchx.schedulers.local_view``);
* :mod:`._local.logs`: the log index the supervisor writes, and reading and tailing the
  logs (the combined view is built at read time);
* :mod:`._local.control`: ``cancel`` and ``delete``;
* :mod:`._local.retention`: removing finished apps (delete, prune by age or count).

In the detached per-app processes:

* :mod:`._local.boot`: the first steps of the supervisor, before its imports;
* :mod:`._local.supervisor`: the supervisor's main loop, retry policy and state record;
* :mod:`._local.replicas`: its replicas as processes (start, signals, exits);
* :mod:`._local.diskspace`: its guard against a full disk;
* :mod:`._local.upkeep`: the AppDef's JSON record and the retention, after the fact;
* :mod:`._local.watchdog`: the process that outlives the supervisor to clean up;
* :mod:`._local.cgroup`: an app's own cgroup, where available (the ``cgroup`` option);
* :mod:`._local.state`: where records live, versioned JSON records, per-app locks,
  process liveness and the "kill what is left of an app" sweep.

Nothing here is public API (what other schedulers can share is public:
:mod:`torchx.schedulers.ids`, :mod:`~torchx.schedulers.follow`,
:mod:`~torchx.schedulers.files`); the layout of the records is versioned (``apiVersion``).
"""

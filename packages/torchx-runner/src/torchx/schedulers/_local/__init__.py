"""Private machinery of the local scheduler (see :mod:`torchx.schedulers.local_scheduler`).

* :mod:`._local.state`: where records live, versioned JSON records,
  per-app locks, process liveness and the "kill what is left of an app" sweep;
* :mod:`._local.records`: finding an app's records, checking they can be trusted,
  reading and settling its state (shared by the scheduler and
  :mod:`torchx.schedulers.local_view`);
* :mod:`._local.boot`: the first steps of that process, before its imports;
* :mod:`._local.supervisor`: the detached per-app process that runs the replicas;
* :mod:`._local.watchdog`: the process that outlives the supervisor to clean up;
* :mod:`._local.cgroup`: an app's own cgroup, where available (the ``cgroup`` option);
* :mod:`._local.logs`: the log index the supervisor writes, and reading and tailing the
  logs (the combined view is built at read time);
* :mod:`._local.checks`: what is refused at dryrun (apps local cannot run);
* :mod:`._local.retention`: removing finished apps (delete, prune by age or count).

Nothing here is public API (what other schedulers can share is public:
:mod:`torchx.schedulers.ids`, :mod:`~torchx.schedulers.follow`,
:mod:`~torchx.schedulers.files`); the layout of the records is versioned (``apiVersion``).
"""

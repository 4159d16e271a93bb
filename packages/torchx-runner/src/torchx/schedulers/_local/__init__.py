"""Private machinery of the local scheduler (see :mod:`torchx.schedulers.local_scheduler`).

* :mod:`._local.state`: where records live, app id validation, atomic JSON writes,
  per-app locks, process liveness and the "kill what is left of an app" sweep;
* :mod:`._local.supervisor`: the detached per-app process that runs the replicas;
* :mod:`._local.logs`: reading and tailing replica logs.

Nothing here is public API; the layout of the records is versioned (``apiVersion``).
"""

"""The Scheduler contract: what every scheduler plugin implements and what it may raise.

Read these first when writing a scheduler plugin; they are all a plugin must know:

* :mod:`.api`: :class:`~torchx.schedulers.contract.api.Scheduler`, the one class a
  plugin subclasses (``submit_dryrun``, ``schedule``, ``describe``, ``list``,
  ``cancel``, ``delete``, ``log_iter``), and the answers it gives
  (``DescribeAppResponse``, ``ListAppResponse``, ``Stream``);
* :mod:`.errors`: ``SchedulerError`` and ``TransientSchedulerError``, what a backend's
  failures become (their one import home; :mod:`.api` re-exports them);
* :mod:`.capabilities`: what a backend cannot do, declared by name with its reason;
* :mod:`.states`: a backend's job and task states mapped to the contract's ``AppState``.

``_pipeline`` runs the one submit pipeline of ``Scheduler.prepare`` (a plugin never calls
it).

Importing this package imports none of them: each is loaded when it is named. The
reusable pieces for implementing the contract are in :mod:`torchx.schedulers.helpers`.
"""

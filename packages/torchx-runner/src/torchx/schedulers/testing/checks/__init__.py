"""The conformance checks, one module per part of the contract.

:class:`~torchx.schedulers.testing.SchedulerConformance` is these groups together:
:mod:`.dryrun` (what a dry run must and must not do), :mod:`.running` (submit,
describe, exit codes, retries, macros), :mod:`.logs` (``log_iter`` and its filters)
and :mod:`.following` (cancel, list, delete, unknown ids, ``wait_for_change``). Each
group is a mixin of :class:`~torchx.schedulers.testing.checks.base.Checks`, which holds
what they share; none is collected by pytest on its own.
"""

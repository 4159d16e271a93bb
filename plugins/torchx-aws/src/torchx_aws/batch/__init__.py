"""The ``aws_batch`` scheduler: an app as one AWS Batch job (multi-node parallel for several replicas).

Modules, as in every TorchX plugin: :mod:`~torchx_aws.batch.scheduler` (the Scheduler:
which call does what), :mod:`~torchx_aws.batch.options` (run options),
:mod:`~torchx_aws.batch.request` (the job definition and submission an app becomes, and
its app id: the dry run's request, made without AWS), :mod:`~torchx_aws.batch.status`
(Batch's answers turned into TorchX states) and :mod:`~torchx_aws.batch.backend` (every
Batch call, on the clients of :mod:`torchx_aws.backend`).
"""

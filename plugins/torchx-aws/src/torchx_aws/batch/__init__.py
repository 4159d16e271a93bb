"""The ``aws_batch`` scheduler: an app as one AWS Batch job (multi-node parallel for several replicas).

Modules: :mod:`~torchx_aws.batch.options` (run options), :mod:`~torchx_aws.batch.request`
(the job definition and submission an app becomes: the dry run's request, made without
AWS), :mod:`~torchx_aws.batch.status` (Batch's answers turned into TorchX states) and
:mod:`~torchx_aws.batch.scheduler` (the Scheduler).
"""

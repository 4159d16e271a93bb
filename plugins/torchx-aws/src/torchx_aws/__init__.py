"""torchx-aws: TorchX's AWS schedulers, as a plugin of torchx-runner.

Installing this distribution registers its schedulers through the ``torchx``
entry-point group (:mod:`torchx_aws.plugin`); nothing here imports boto3 until a job
goes to AWS. The AWS configuration is boto3's own: ``AWS_REGION`` /
``AWS_DEFAULT_REGION``, ``AWS_PROFILE`` and the shared config files, environment
credentials, and ``AWS_ENDPOINT_URL`` to reach another endpoint (the integration
tests use an AWS API emulator on loopback); the run options ``region`` and
``profile`` override the first two per job.
"""

from torchx_aws._version import __version__

__all__ = ["__version__"]

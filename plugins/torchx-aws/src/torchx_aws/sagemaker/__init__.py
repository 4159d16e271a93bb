"""The ``aws_sagemaker`` scheduler: an app's first role as one SageMaker training job.

Modules, as in every TorchX plugin:

* :mod:`.scheduler`: the Scheduler (which call does what);
* :mod:`.options`: the run options (upstream TorchX's names), read into a typed record;
* :mod:`.request`: the app and options as ``CreateTrainingJob``'s parameters, and the
  app ids (pure: no boto3, no AWS call);
* :mod:`.status`: the job's states and answers in TorchX terms (pure);
* :mod:`.backend`: every AWS call, on the clients of :mod:`torchx_aws.backend`;
* :mod:`torchx_aws.cwlogs`: the job's CloudWatch Logs streams as torchx log lines.

Nothing here imports boto3 at import time: it is imported when a client is made.
"""

"""The ``aws_sagemaker`` scheduler: an app's first role as one SageMaker training job.

* :mod:`.options`: the run options (upstream TorchX's names), read into a typed record;
* :mod:`.request`: the app and options as ``CreateTrainingJob``'s parameters (pure: no
  boto3, no AWS call), the job states and the app ids;
* :mod:`torchx_aws.cwlogs`: the job's CloudWatch Logs streams as torchx log lines;
* :mod:`.scheduler`: the Scheduler that sends the request and follows the job.

Nothing here imports boto3 at import time: it is imported when a client is made.
"""

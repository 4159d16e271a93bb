"""Benchmarks of the aws_batch scheduler that need no AWS endpoint.

Targets come from the AWS plugin's issue:

* ``aws.dryrun_batch_16_nodes``: ``Runner.dryrun`` of ``dist.ddp -j 16x8`` on
  ``aws_batch`` (a multi-node job definition of 16 nodes) under 5 ms, best of N;
* ``aws.help_imports_no_boto3``: ``import torchx_aws``, ``torchx --help`` and an
  aws_batch dry run import neither boto3 nor botocore (the value is the number of such
  modules loaded: 0).

(``torchx status`` of a 16-node job in one DescribeJobs call is checked by the plugin's
unit tests, request by request.)
"""

from __future__ import annotations

import tempfile
import textwrap
from pathlib import Path

from harness import Context, Measurement, case, child_env, run_snippet

_DRYRUN = textwrap.dedent(
    """
    import json, sys, time
    try:
        from torchx.components.args import materialize_appdef
        from torchx.components.finder import get_component
        from torchx.runner import Runner
        from torchx_aws.batch.scheduler import create_scheduler
    except ImportError as e:
        print(json.dumps({"skip": f"not installed ({e})"}))
        sys.exit(0)
    app = materialize_appdef(get_component("dist.ddp").fn, ["--image", "ghcr.io/pytorch/torchx:0.7.0", "-j", "16x8", "-m", "train"])
    runner = Runner("bench", {"aws_batch": create_scheduler})
    cfg = {"queue": "gpu"}

    def timed():
        t = time.perf_counter()
        info = runner.dryrun(app, "aws_batch", cfg)
        return (time.perf_counter() - t) * 1000, info

    cold, info = timed()
    assert info.request.num_nodes == 16
    print(json.dumps({"samples": [timed()[0] for _ in range(%d)], "cold": cold,
                      "boto3": [m for m in sys.modules if m.split(".")[0] in ("boto3", "botocore")]}))
    """
)

_IMPORTS = textwrap.dedent(
    """
    import json, runpy, sys
    try:
        import torchx_aws
    except ImportError as e:
        print(json.dumps({"skip": f"not installed ({e})"}))
        sys.exit(0)
    after_import = [m for m in sys.modules if m.split(".")[0] in ("boto3", "botocore")]
    sys.argv = ["torchx", "--help"]
    try:
        import contextlib, io
        with contextlib.redirect_stdout(io.StringIO()):
            runpy.run_module("torchx.cli.main", run_name="__main__")
    except SystemExit:
        pass
    after_help = [m for m in sys.modules if m.split(".")[0] in ("boto3", "botocore")]
    print(json.dumps({"import": after_import, "help": after_help}))
    """
)


@case("aws.dryrun_batch_16_nodes", target="< 5 ms")
def dryrun_batch_16_nodes(ctx: Context) -> Measurement:
    """Runner.dryrun(dist.ddp -j 16x8) on aws_batch: the 16-node job definition, best of N.

    Includes the Runner's validation and config handling, the run-option checks, the
    scheduler's copy of the app and the request (node ranges, the node wrapper, tags).
    Nothing is sent to AWS. The first call is reported apart.
    """
    n = max(ctx.inner * 2, 20)
    with tempfile.TemporaryDirectory(prefix="torchx-bench-aws-") as tmp:
        env = child_env(HOME=tmp, TORCHX_HOME=str(Path(tmp) / "state"))
        ours = run_snippet(ctx.python, _DRYRUN % n, env=env)
    return Measurement.from_times(
        ours["samples"],
        statistic="min",
        first_call_ms=round(ours["cold"], 2),
        boto3_modules_loaded=ours["boto3"],
    )


@case("aws.help_imports_no_boto3", target="<= 0 modules")
def help_imports_no_boto3(ctx: Context) -> Measurement:
    """import torchx_aws, then torchx --help: boto3/botocore modules loaded (must be 0)."""
    with tempfile.TemporaryDirectory(prefix="torchx-bench-aws-") as tmp:
        got = run_snippet(ctx.python, _IMPORTS, env=child_env(HOME=tmp))
    loaded = sorted(set(got["import"]) | set(got["help"]))
    return Measurement(value=float(len(loaded)), unit="modules", details={"loaded": loaded})

"""torchx-aws is found like any plugin, and importing it never imports boto3."""

from __future__ import annotations

import torchx_aws.plugin

from torchx.schedulers.testing.registration import entry_point, modules_after


def test_the_entry_point_names_the_plugin_module() -> None:
    assert entry_point("aws") == "torchx_aws.plugin"


def test_every_scheduler_is_a_lazy_module_reference() -> None:
    for name, ref in torchx_aws.plugin.torchx_schedulers().items():
        module, _, factory = ref.partition(":")
        assert name.startswith("aws_"), name
        assert module.startswith("torchx_aws.") and factory, ref


def test_the_plugin_module_imports_nothing_heavy() -> None:
    loaded = modules_after("import sys, torchx_aws.plugin as p; p.torchx_schedulers()")
    assert [m for m in loaded if m.startswith("torchx_aws")] == [
        "torchx_aws",
        "torchx_aws._version",
        "torchx_aws.plugin",
    ]
    assert not [m for m in loaded if m.split(".")[0] in ("boto3", "botocore")]

"""Acme Batch instance sizes as TorchX named resources (``-h acme.gpu8``)."""

from __future__ import annotations

from torchx.specs import Resource


def small() -> Resource:
    return Resource(cpu=2, gpu=0, memMB=4096, capabilities={"acme/instance": "small"})


def gpu8() -> Resource:
    return Resource(cpu=96, gpu=8, memMB=1_048_576, capabilities={"acme/instance": "gpu8"})

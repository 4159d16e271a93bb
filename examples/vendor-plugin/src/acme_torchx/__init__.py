"""Acme Batch for TorchX: an example vendor plugin (see docs/plugins.md).

Nothing is imported here: TorchX imports :mod:`acme_torchx.plugin` to learn what
this distribution adds, and the rest only when a name is used.
"""

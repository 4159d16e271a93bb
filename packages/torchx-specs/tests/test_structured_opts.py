"""StructuredOpts for dataclasses and attrs classes: runopts, from_cfg, nesting, mapping protocol."""

from __future__ import annotations

from dataclasses import dataclass, field

import attrs
import pytest

from torchx.specs import InvalidRunConfigException, StructuredOpts


@dataclass
class K8sOpts(StructuredOpts):
    context: str = "default"
    """kubeconfig context"""


@dataclass
class DCOpts(StructuredOpts):
    cluster_name: str
    """Name of the cluster."""

    num_retries: int = 3
    """Number of retries."""

    tags: list[str] = field(default_factory=list)
    k8s: K8sOpts | None = None
    debug: bool | None = None


@attrs.define
class AttrsOpts(StructuredOpts):
    queue_name: str
    """queue"""
    priority: float = 0.5
    """priority"""


def test_as_runopts_from_dataclass() -> None:
    opts = DCOpts.as_runopts()
    names = [name for name, _ in opts]
    assert names == ["cluster_name", "num_retries", "tags", "k8s.context", "debug"]
    cluster = opts.get("clusterName")
    assert cluster is not None and cluster.is_required and cluster.help == "Name of the cluster."
    retries = opts.get("num_retries")
    assert retries is not None and retries.default == 3 and retries.help == "Number of retries."
    ctx = opts.get("k8s.context")
    assert ctx is not None and ctx.help == "kubeconfig context" and ctx.default == "default"
    debug = opts.get("debug")
    assert debug is not None and debug.opt_type is bool and not debug.is_required


def test_as_runopts_from_attrs() -> None:
    opts = AttrsOpts.as_runopts()
    queue = opts.get("queueName")
    assert queue is not None and queue.is_required and queue.help == "queue"
    prio = opts.get("priority")
    assert prio is not None and prio.default == 0.5 and prio.help == "priority"


def test_from_cfg_camel_case_and_nested() -> None:
    opts = DCOpts.from_cfg({"clusterName": "c", "numRetries": 5, "k8s.context": "prod"})
    assert opts.cluster_name == "c" and opts.num_retries == 5
    assert opts.k8s == K8sOpts(context="prod")
    assert DCOpts.from_cfg({"cluster_name": "c"}).k8s is None
    assert AttrsOpts.from_cfg({"queue_name": "q"}).priority == 0.5


def test_from_cfg_missing_required() -> None:
    with pytest.raises(InvalidRunConfigException, match="required run option 'cluster_name'"):
        DCOpts.from_cfg({})


def test_resolve_then_from_cfg_round_trip() -> None:
    resolved = DCOpts.as_runopts().resolve({"clusterName": "c"})
    opts = DCOpts.from_cfg(resolved)
    assert opts.num_retries == 3 and opts.tags == [] and opts.k8s == K8sOpts()


def test_mapping_protocol() -> None:
    opts = DCOpts(cluster_name="c")
    assert opts["cluster_name"] == "c" and opts["clusterName"] == "c"
    assert opts.get("debug", True) is True and opts.get("missing", 1) == 1
    assert "num_retries" in opts and "nope" not in opts
    assert len(opts) == 5 and next(iter(opts)) == "cluster_name"
    with pytest.raises(KeyError):
        opts["nope"]
    merged = opts | AttrsOpts(queue_name="q")
    assert merged["cluster_name"] == "c" and merged["queue_name"] == "q"


def test_declared_inside_a_function() -> None:
    @dataclass
    class Local(StructuredOpts):
        inner: K8sOpts | None = None
        """nested"""

    assert [n for n, _ in Local.as_runopts()] == ["inner.context"]

"""StructuredOpts for dataclasses and attrs classes: runopts, from_cfg, nesting, mapping protocol."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from torchx.specs import InvalidRunConfigException, StructuredOpts
from torchx.specs.structured_opts import opt


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


# -- opt(): every option declared once, with its name, aliases, check and help ---------------


def _check_queue(value: str) -> str:
    if not value.strip() or value != value.strip().lower():
        raise InvalidRunConfigException(f"run option 'queue'={value!r} is not a lower-case name")
    return value


@dataclass(frozen=True, kw_only=True)
class Declared(StructuredOpts):
    queue: str = opt(required=True, help="the queue", check=_check_queue)
    mail_user: str | None = opt(name="mail-user", help="who gets mail", aliases=["email"])
    num_retries: int = opt(3, help="retries")
    tags: list[str] = opt([], help="tags")
    labels: dict[str, str] = opt({}, help="labels")
    token: str | None = opt(help="an API token", secret=True)


def test_opt_declares_name_aliases_defaults_and_help() -> None:
    opts = Declared.as_runopts()
    assert [n for n, _ in opts] == ["queue", "mail-user", "num_retries", "tags", "labels", "token"]
    queue, mail = opts.get("queue"), opts.get("email")
    assert queue is not None and queue.is_required and queue.help == "the queue"
    assert mail is not None and mail.help == "who gets mail" and mail.aliases == ["email"]
    retries = opts.get("numRetries")  # camelCase is read, though not listed
    assert retries is not None and retries.default == 3 and retries.aliases == []
    tags, labels = opts.get("tags"), opts.get("labels")
    assert tags is not None and tags.default == [] and tags.opt_type == list[str]
    assert labels is not None and labels.default == {} and labels.opt_type == dict[str, str]


def test_a_bare_field_lists_its_camel_case_alias_as_upstream() -> None:
    retries = DCOpts.as_runopts().get("num_retries")
    assert retries is not None and retries.aliases == ["numRetries"]


def test_from_cfg_reads_every_name_and_runs_the_checks() -> None:
    opts = Declared.from_cfg({"queue": "gpu", "email": "a@b", "numRetries": 1})
    assert (opts.queue, opts.mail_user, opts.num_retries) == ("gpu", "a@b", 1)
    assert Declared.from_cfg({"queue": "gpu", "mail-user": "x", "mail_user": "y"}).mail_user == "x"
    with pytest.raises(InvalidRunConfigException, match="'queue'='GPU' is not a lower-case name"):
        Declared.from_cfg({"queue": "GPU"})
    with pytest.raises(InvalidRunConfigException, match="required run option 'queue' is missing"):
        Declared.from_cfg({"mail-user": "x"})


def test_list_and_dict_defaults_are_copied_per_instance() -> None:
    a, b = Declared(queue="a"), Declared(queue="b")
    assert a.tags == [] and a.tags is not b.tags and a.labels is not b.labels


def test_a_secret_stays_out_of_the_repr() -> None:
    opts = Declared(queue="q", token="s3cr3t")
    assert "s3cr3t" not in repr(opts) and opts.token == "s3cr3t"


def test_given_checks_only_what_is_given_and_fills_no_default() -> None:
    assert Declared.given(None) == {} and Declared.given({}) == {}
    assert Declared.given({"email": "x", "unknown": 1, "tags": None}) == {"mail_user": "x"}
    with pytest.raises(InvalidRunConfigException, match="not a lower-case name"):
        Declared.given({"queue": " "})


def test_an_instance_is_a_mapping_of_option_names() -> None:
    opts = Declared(queue="q", mail_user="m")
    assert isinstance(opts, Mapping)
    assert list(opts) == ["queue", "mail-user", "num_retries", "tags", "labels", "token"]
    assert opts["mail-user"] == opts["mail_user"] == opts["email"] == opts.get("mailUser") == "m"
    assert dict(opts)["num_retries"] == 3 and "email" in opts and "nope" not in opts
    # read back as a cfg, it is the same instance
    assert Declared.from_cfg(dict(opts)) == opts and Declared.of(opts) is opts


def test_as_runopts_is_built_once_and_each_caller_gets_its_own_copy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first = Declared.as_runopts()
    opt_ = first.get("queue")
    assert opt_ is not None
    opt_.help = "changed by a caller"
    # every field has help=: the class source is never read (it costs milliseconds)
    monkeypatch.setattr(Declared, "get_docstrings", classmethod(lambda cls: pytest.fail("read")))
    again = Declared.as_runopts()
    assert again == Declared.as_runopts() and again is not first
    queue = again.get("queue")
    assert queue is not None and queue.help == "the queue"


def test_a_required_option_has_no_default() -> None:
    with pytest.raises(ValueError, match="a required option has no default"):
        opt("x", required=True, help="h")


# -- property: a cfg as written on the command line reads back as the same instance ---------

_TEXT = st.text(
    alphabet=st.characters(categories=["L", "N"], include_characters="-_./@"), min_size=1
).filter(lambda t: t == t.strip().lower())


@settings(max_examples=200, deadline=None)
@given(
    queue=_TEXT,
    mail=st.none() | _TEXT,
    retries=st.integers(-(10**6), 10**6),
    tags=st.lists(_TEXT, max_size=4),
    labels=st.dictionaries(_TEXT.filter(lambda t: ":" not in t), _TEXT, max_size=3),
)
def test_cfg_string_round_trip(
    queue: str, mail: str | None, retries: int, tags: list[str], labels: dict[str, str]
) -> None:
    written = Declared(queue=queue, mail_user=mail, num_retries=retries, tags=tags, labels=labels)
    opts = Declared.as_runopts()
    text = opts.cfg_to_str(dict(written))
    read = Declared.from_cfg(opts.resolve(opts.cfg_from_str(text, strict=True)))
    assert read == written


@settings(max_examples=200, deadline=None)
@given(value=st.text(max_size=20))
def test_a_check_is_idempotent_or_refuses_in_one_line(value: str) -> None:
    try:
        once = Declared.from_cfg({"queue": value})
    except InvalidRunConfigException as e:
        assert "\n" not in str(e) and "'queue'" in str(e)
        return
    assert Declared.from_cfg(dict(once)) == once

"""Arguments and env values reach the container as typed, though Kubernetes expands ``$(...)``.

Kubernetes rewrites a container's command, args and env values: ``$(NAME)`` becomes the
value of the container's variable ``NAME`` when it has one (else it stays), and ``$$``
becomes ``$`` (its documented rules for dependent environment variables). :func:`expand`
below is that rewriting, written from those rules; the properties check that
``pod.literal`` undoes it for any text and any variables, through the whole request of
every flavour (after TorchX's own macro substitution, which leaves text that names no
macro as typed, ``$$`` included).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from torchx_k8s.options import K8sOpts
from torchx_k8s.pod import literal
from torchx_k8s.request import make_request

from torchx.specs import AppDef, Resource, Role


def expand(text: str, env: dict[str, str]) -> str:
    """What Kubernetes makes of ``text`` in a container whose variables are ``env``."""
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c != "$" or i + 1 == len(text):  # a '$' at the very end stays
            out.append(c)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "$":  # the escape: one '$'
            out.append("$")
            i += 2
        elif nxt == "(":
            end = text.find(")", i + 2)
            if end < 0:  # never closed: kept as typed
                out.append("$(")
                i += 2
            else:
                name = text[i + 2 : end]
                out.append(env.get(name, f"$({name})"))
                i = end + 1
        else:  # '$' before anything else: kept
            out.append("$" + nxt)
            i += 2
    return "".join(out)


#: Text rich in what Kubernetes reads: '$', parentheses, variable-like names.
TEXT = st.text(alphabet=st.sampled_from(list("$()AB_x ")), max_size=24)
ENV = st.dictionaries(st.sampled_from(["A", "B", "AB", "x", ""]), st.text(max_size=4))


def test_the_model_is_kubernetes_documented_behaviour() -> None:
    env = {"LOGLEVEL": "WARNING", "A": "alpha"}
    assert expand("$(LOGLEVEL)", env) == "WARNING"  # what the attack saw
    assert expand("B=$(A)-x", env) == "B=alpha-x"
    assert expand("pa$$word", env) == "pa$word"
    assert expand("$$(A)", env) == "$(A)"  # the documented escape
    assert expand("$(UNSET) $HOME $( $", env) == "$(UNSET) $HOME $( $"


@given(TEXT, ENV)
def test_what_is_typed_arrives_as_typed(text: str, env: dict[str, str]) -> None:
    assert expand(literal(text), env) == text


@given(TEXT)
def test_only_what_kubernetes_would_change_is_escaped(text: str) -> None:
    escaped = literal(text)
    if "$(" not in text and "$$" not in text:
        assert escaped == text  # $HOME, a lone '$': left as typed, the spec stays readable
    read_by_kubernetes = sum(1 for i, c in enumerate(text[:-1]) if c == "$" and text[i + 1] in "$(")
    assert len(escaped) == len(text) + read_by_kubernetes  # one '$' more for each


@pytest.mark.parametrize("flavour", ["volcano", "jobset"])
@given(args=st.lists(TEXT, max_size=3), value=TEXT)
def test_every_flavours_pods_carry_the_escaped_text(
    flavour: str, args: list[str], value: str
) -> None:
    role = Role(
        "w",
        image="busybox",
        entrypoint="echo",
        args=args,
        env={"V": value},
        resource=Resource(cpu=1, gpu=0, memMB=64),
    )
    cfg: dict[str, Any] = {"flavour": flavour} if flavour != "volcano" else {}
    req = make_request(
        AppDef("a", [role]), "a-1", K8sOpts.from_cfg(K8sOpts.as_runopts().resolve(cfg))
    )
    spec = req.resource["spec"]
    if flavour == "jobset":
        pod = spec["replicatedJobs"][0]["template"]["spec"]["template"]
    else:
        pod = spec["tasks"][0]["template"]
    container = pod["spec"]["containers"][0]
    variables = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    # the container's own variables are what Kubernetes would expand $(V) to
    seen = {k: expand(v, variables) for k, v in variables.items()}
    # as typed: the text names no macro, so TorchX's own substitution leaves it ('$$' too)
    assert [expand(part, seen) for part in container["command"]] == ["echo", *args]
    assert seen["V"] == value

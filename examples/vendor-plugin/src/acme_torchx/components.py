"""Components for Acme Batch (``torchx run acme.hello``)."""

from __future__ import annotations

from torchx import specs


def hello(who: str = "world", replicas: int = 1, h: str = "acme.small") -> specs.AppDef:
    """Says hello from every replica: the smallest app that shows a queue works.

    Args:
        who: whom to greet
        replicas: number of replicas
        h: named resource of each replica (acme.small, acme.gpu8, ...)
    """
    return specs.AppDef(
        name="hello",
        roles=[
            specs.Role(
                name="greeter",
                image="acme/base:1",
                entrypoint="echo",
                args=[f"hello {who} from replica {specs.macros.replica_id}"],
                num_replicas=replicas,
                resource=specs.resource(h=h),
            )
        ],
    )

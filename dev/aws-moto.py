"""moto's server (``moto_server``), with AWS Batch's node environment in multi-node jobs.

Started by ``dev/aws up`` with the private venv's Python. moto runs each node of a
multi-node Batch job as a container named ``<job name>-<job id>-<node index>``, but sets
none of the node variables AWS Batch documents for them. This adds, to those containers
only, what AWS sets: ``AWS_BATCH_JOB_NODE_INDEX`` (the node's index) and ``AWS_BATCH_JOB_MAIN_NODE_INDEX``
(0: moto starts node 0 first, as the main node, and gives the others its address in
``AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS`` itself). Nothing else of moto changes.
"""

from __future__ import annotations

import re
import sys
from typing import Any

import docker.models.containers as containers

_NODE = re.compile(r"-([0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12})-(\d+)$")
_run = containers.ContainerCollection.run


def _run_with_node_env(
    self: Any, image: str, command: Any = None, *args: Any, **kwargs: Any
) -> Any:
    match = _NODE.search(str(kwargs.get("name") or ""))
    if match is not None:
        env = kwargs.setdefault("environment", {})
        if isinstance(env, dict):
            env.setdefault("AWS_BATCH_JOB_NODE_INDEX", match.group(2))
            env.setdefault("AWS_BATCH_JOB_MAIN_NODE_INDEX", "0")
    return _run(self, image, command, *args, **kwargs)


containers.ContainerCollection.run = _run_with_node_env  # type: ignore[method-assign]

if __name__ == "__main__":
    from moto.server import main

    sys.exit(main(sys.argv[1:]))

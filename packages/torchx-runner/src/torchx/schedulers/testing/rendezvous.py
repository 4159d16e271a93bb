"""A program for a plugin's integration tests: replicas meet over TCP at rank 0's host.

The proof that a scheduler's replicas find each other: each resolves and reaches rank
0's host by the name the scheduler gave it. Rank 0 listens on ``RDZV_PORT`` on every
address; every other rank connects to ``RANK0_HOST`` and sends its rank; once all
``WORLD - 1`` peers said hello, rank 0 answers each with the sorted list of ranks it
saw. Each rank prints ``rank R/W met [0, 1, ...] on NODE via RANK0_HOST``.

Standard library only, and run as a file (not imported), so that it runs with any
``python3`` on the backend's hosts::

    from torchx.schedulers.testing import rendezvous
    args = ["python3", rendezvous.__file__, "--node-var", "SLURMD_NODENAME"]

Environment: ``RANK``, ``WORLD``, ``RANK0_HOST``, ``RDZV_PORT``. Options: ``--rank-var``
and ``--world-var`` name a backend's own variable to use where ``RANK``/``WORLD`` is
unset (``SLURM_NODEID``, so the program runs under a bare ``srun``); ``--node-var``
(repeatable) the variables whose first word names the node in the output, else the
host name. Either side gives up after 60 s. :class:`Ports` gives each test a port.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time

#: How long rank 0 waits for its peers, and a peer for rank 0 to listen, in seconds.
DEADLINE = 60


class Ports:
    """TCP ports for the rendezvous of one test run: each :meth:`next` a new one, and
    two runs at once (other processes) ``pid % 1000 * 10`` apart from ``base``."""

    def __init__(self, base: int) -> None:
        self._last = base + os.getpid() % 1000 * 10

    def next(self) -> int:
        """A port this run has not handed out yet."""
        self._last += 1
        return self._last


def _env(name: str, fallback: str | None = None) -> str:
    value = os.environ.get(name) or (os.environ.get(fallback) if fallback else None)
    if not value:
        sys.exit(f"rendezvous.py: {name} is not set")
    return value


def _node(variables: list[str]) -> str:
    for name in variables:
        words = os.environ.get(name, "").split()
        if words:
            return words[0]
    return socket.gethostname()


def _serve(port: int, world: int) -> list[int]:
    ranks = [0]
    with socket.create_server(("", port), reuse_port=False) as server:
        server.settimeout(DEADLINE)
        peers: list[socket.socket] = []
        while len(peers) < world - 1:
            conn, _ = server.accept()
            ranks.append(int(conn.recv(16).decode()))
            peers.append(conn)
        answer = ",".join(map(str, sorted(ranks))).encode()
        for conn in peers:
            conn.sendall(answer)
            conn.close()
    return sorted(ranks)


def _join(host: str, port: int, rank: int) -> list[int]:
    deadline = time.monotonic() + DEADLINE
    while True:
        try:
            conn = socket.create_connection((host, port), timeout=5)
            break
        except OSError:
            # rank 0 may not listen yet: its replica starts independently of ours
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    with conn:
        conn.sendall(str(rank).encode())
        return [int(r) for r in conn.recv(256).decode().split(",")]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="replicas meet over TCP at rank 0's host")
    parser.add_argument("--rank-var", help="the variable to read where RANK is unset")
    parser.add_argument("--world-var", help="the variable to read where WORLD is unset")
    parser.add_argument(
        "--node-var", action="append", default=[], help="the variable naming the node"
    )
    args = parser.parse_args(argv)
    rank = int(_env("RANK", args.rank_var))
    world = int(_env("WORLD", args.world_var))
    host = _env("RANK0_HOST")
    port = int(_env("RDZV_PORT"))
    seen = _serve(port, world) if rank == 0 else _join(host, port, rank)
    print(f"rank {rank}/{world} met {seen} on {_node(args.node_var)} via {host}", flush=True)


if __name__ == "__main__":
    main()

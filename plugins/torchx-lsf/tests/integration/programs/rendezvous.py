"""Replicas meet over TCP by host name: the proof that nodes resolve and reach each other.

Rank 0 listens on RDZV_PORT on every address; every other rank connects to RANK0_HOST
(the host LSF runs rank 0 on, which the replica's script found with bjobs) and sends its rank; rank 0 answers
with the sorted list of ranks it saw once all WORLD - 1 peers said hello. Each rank prints
``rank R/W met [0, 1, ...] on NODE``. Standard library only: it runs with any python3.

Environment: RANK, WORLD, RANK0_HOST, RDZV_PORT.
"""

from __future__ import annotations

import os
import socket
import sys
import time


def env(name: str, fallback: str = "") -> str:
    value = os.environ.get(name) or (os.environ.get(fallback) if fallback else None)
    if not value:
        sys.exit(f"rendezvous.py: {name} is not set")
    return value


def main() -> None:
    rank = int(env("RANK"))
    world = int(env("WORLD"))
    host = env("RANK0_HOST")
    port = int(env("RDZV_PORT"))
    node = os.environ.get("LSB_HOSTS", socket.gethostname()).split()[0]
    if rank == 0:
        ranks = [0]
        with socket.create_server(("", port), reuse_port=False) as server:
            server.settimeout(60)
            peers = []
            while len(peers) < world - 1:
                conn, _ = server.accept()
                ranks.append(int(conn.recv(16).decode()))
                peers.append(conn)
            answer = ",".join(map(str, sorted(ranks))).encode()
            for conn in peers:
                conn.sendall(answer)
                conn.close()
        seen = sorted(ranks)
    else:
        deadline = time.monotonic() + 60
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
            seen = [int(r) for r in conn.recv(256).decode().split(",")]
    print(f"rank {rank}/{world} met {seen} on {node} via {host}", flush=True)


if __name__ == "__main__":
    main()

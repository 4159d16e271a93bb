"""The process ``serve.torchserve`` runs: serve a model archive, register it, exit.

``python -m torchx.components._torchserve_app --model_path P --management_api URL
[--port N] [--dryrun] [--KEY VALUE ...]``: copies ``P`` into a temporary
directory (a URL needs fsspec), serves that directory over HTTP on ``N``, and
POSTs ``URL/models?url=http://<this host>:N/<archive>&KEY=VALUE...`` to
TorchServe, which downloads the archive while answering. Prints TorchServe's
answer; exits 1 with one line when a package is missing or TorchServe refuses.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import importlib.util
import os
import shutil
import socket
import sys
import tempfile
import threading
import urllib.error
import urllib.parse
import urllib.request

_PROG = "serve.torchserve"


def _fetch(model_path: str, dest_dir: str) -> str:
    """Copies the archive into ``dest_dir``; returns its file name."""
    name = os.path.basename(urllib.parse.urlparse(model_path).path.rstrip("/")) or "model.mar"
    dest = os.path.join(dest_dir, name)
    scheme = urllib.parse.urlparse(model_path).scheme
    if scheme in ("", "file"):
        source = model_path[len("file://") :] if scheme == "file" else model_path
        shutil.copyfile(os.path.expanduser(source), dest)
        return name
    if importlib.util.find_spec("fsspec") is None:
        raise SystemExit(
            f"{_PROG}: model_path {model_path!r} is a URL, which needs the fsspec package "
            "where the app runs (pip install fsspec, with the backend for its scheme)"
        )
    import fsspec  # type: ignore[import-not-found,unused-ignore]

    with fsspec.open(model_path, "rb") as src, open(dest, "wb") as out:
        shutil.copyfileobj(src, out)
    return name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=_PROG)
    parser.add_argument("--model_path", required=True)
    parser.add_argument("--management_api", required=True)
    parser.add_argument("--port", type=int, default=8222)
    parser.add_argument("--dryrun", action="store_true")
    args, extra = parser.parse_known_args(argv)
    params: dict[str, str] = {}
    for i in range(0, len(extra), 2):
        key = extra[i]
        if not key.startswith("--") or i + 1 >= len(extra):
            parser.error(f"registration parameters go as --KEY VALUE pairs, got {extra[i:]}")
        params[key[2:]] = extra[i + 1]
    with tempfile.TemporaryDirectory(prefix="torchx_torchserve_") as tmp:
        try:
            name = _fetch(args.model_path, tmp)
        except OSError as e:
            print(f"{_PROG}: cannot read model_path {args.model_path!r}: {e}", file=sys.stderr)
            return 1
        handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=tmp)
        server = http.server.ThreadingHTTPServer(("", args.port), handler)
        host = socket.gethostname()
        query = urllib.parse.urlencode(
            {"url": f"http://{host}:{server.server_port}/{name}", **params}
        )
        url = f"{args.management_api.rstrip('/')}/models?{query}"
        if args.dryrun:
            print(f"POST {url}")
            server.server_close()
            return 0
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            with urllib.request.urlopen(urllib.request.Request(url, method="POST")) as resp:
                print(resp.read().decode("utf-8", "replace"))
            return 0
        except urllib.error.HTTPError as e:
            body = e.read().decode("utf-8", "replace").strip()
            print(f"{_PROG}: TorchServe refused the model ({e.code}): {body}", file=sys.stderr)
            return 1
        except urllib.error.URLError as e:
            print(f"{_PROG}: cannot reach {args.management_api}: {e.reason}", file=sys.stderr)
            return 1
        finally:
            server.shutdown()
            server.server_close()


if __name__ == "__main__":
    sys.exit(main())

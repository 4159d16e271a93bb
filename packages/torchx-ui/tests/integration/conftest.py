"""``torchx ui`` against real backends: collected only under ``TORCHX_UI_INTEGRATION``
(``slurm`` or ``docker``, set by ``nox -s integration_slurm`` / ``integration_docker``
once their backend is up), and then only that backend's test file."""

from __future__ import annotations

import os

_BACKEND = os.environ.get("TORCHX_UI_INTEGRATION", "")
collect_ignore_glob = [f for f in ("test_slurm.py", "test_docker.py") if f != f"test_{_BACKEND}.py"]

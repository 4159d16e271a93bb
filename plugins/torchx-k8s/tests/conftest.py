"""Unit tests of torchx-k8s need no cluster; ``integration/`` (a real API server) gates itself.

The upstream CRD manifests (Volcano's Job, JobSet, both AppWrapper versions) are not part
of the repository: the folder holding them is named by ``TORCHX_K8S_UPSTREAM_CRDS``, which
CI sets whenever it has them. A test asking for the ``upstream_crds`` fixture skips, and
may skip in CI (``ci_may_skip``), only when that variable is unset; once it is set, a
manifest missing from the folder fails the test.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

UPSTREAM_CRDS = "TORCHX_K8S_UPSTREAM_CRDS"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if os.environ.get(UPSTREAM_CRDS):
        return  # set: nothing may skip
    reason = f"{UPSTREAM_CRDS} is unset (the upstream CRD manifests are not in the repository)"
    for item in items:
        if "upstream_crds" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.ci_may_skip(reason=reason))


@pytest.fixture
def upstream_crds() -> Path:
    """The folder of upstream CRD manifests that ``TORCHX_K8S_UPSTREAM_CRDS`` names."""
    folder = os.environ.get(UPSTREAM_CRDS)
    if not folder:
        pytest.skip(f"{UPSTREAM_CRDS} names no folder of upstream CRD manifests")
    path = Path(folder)
    assert path.is_dir(), f"{UPSTREAM_CRDS}={folder} is not a folder"
    return path

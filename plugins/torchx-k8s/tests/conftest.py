"""Unit tests of torchx-k8s need no cluster; ``integration/`` (a real API server) gates itself."""

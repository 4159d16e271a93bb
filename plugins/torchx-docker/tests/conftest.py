"""Unit tests of torchx-docker: no engine needed (``tests/integration`` uses a real one)."""

collect_ignore_glob = ["integration/*"]

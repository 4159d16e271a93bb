"""Unit tests of torchx-docker need no engine; ``integration/`` (a real one) gates itself."""

"""Unit tests of torchx-aws need no AWS endpoint; ``integration/`` (an emulator) gates itself."""

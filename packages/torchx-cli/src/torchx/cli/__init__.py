"""The ``torchx`` command. Its subcommands come from the installed plugins (see :mod:`torchx.cli.main`)."""

"""``torchx ui``: a live view, in the browser, of the apps of every scheduler named.

The ``torchx`` command gains ``ui`` through the ``torchx_cli_commands`` hook
(:mod:`torchx.ui.plugin`). ``torchx ui`` serves one page on 127.0.0.1 and prints its
URL with a random token, as Jupyter does; every request carries that token. The page
lists the apps of each scheduler, asked with one ``list`` per interval
(:mod:`torchx.ui.poller`), and is told of changes through server-sent events
(:mod:`torchx.ui.server`; an app's routes in :mod:`torchx.ui.approutes`, its log's in
:mod:`torchx.ui.logroutes`). The request checks (token, Host) are in
:mod:`torchx.ui.security`, applied to every request by :mod:`torchx.ui.guard`.

Nothing here imports the server library until the command runs.
"""

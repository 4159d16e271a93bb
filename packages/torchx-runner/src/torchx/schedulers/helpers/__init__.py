"""Helpers for scheduler plugin authors: the pieces every backend would otherwise write again.

None of these is needed to satisfy the contract (:mod:`torchx.schedulers.contract`);
each is what several plugins share, written once. By job:

* app ids: :mod:`.ids` (making, joining and checking them);
* talking to a backend: :mod:`.commands` (its command-line tools, never a hang),
  :mod:`.clients` (SDK clients made once, closed together), :mod:`.retry` (backoff,
  and a create made once after a transient failure), :mod:`.labels` (the label and
  tag names TorchX puts on what it submits);
* an AppDef's checks and records: :mod:`.scriptroles` (apps run from a generated
  shell script), :mod:`.appstore` (the submitted AppDef kept beside the job),
  :mod:`.privatedir` and :mod:`.files` (private directories and files in a shared
  job directory);
* logs: :mod:`.follow` (a growing file), :mod:`.polling` (many logs on one thread),
  :mod:`.paged` (an API that serves pages), :mod:`.merge` (stdout and stderr as one),
  :mod:`.window` (``--since``/``--until``), :mod:`.replica_errors` (why a replica
  failed);
* start-up: :mod:`.quick` (a plugin's quick ``torchx status``/``log``/``cancel``).

Importing this package imports none of them: each is loaded when it is named.
"""

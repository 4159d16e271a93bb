"""``torchx.version``: the version that code written for upstream TorchX reads.

Upstream ships a ``torchx/__init__.py`` that imports ``__version__`` from here; in
this project ``torchx`` is a namespace shared by every distribution and has no
``__init__.py``, so the version is read from this module: ``import torchx.version``,
then ``torchx.version.__version__``. It is torchx-specs' version, the distribution
every other one depends on.

>>> import torchx.version
>>> torchx.version.__version__ == __import__("torchx.specs").specs.__version__
True
"""

from torchx.specs._version import __version__

__all__ = ["__version__"]

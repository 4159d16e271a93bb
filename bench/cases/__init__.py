"""Benchmark cases, one module per area (``specs.py``, later ``runner.py``, ``cli.py``).

Every module here is imported by the harness (:func:`harness.load_cases`); each
``@case``-decorated function in it is registered. See bench/README.md to add a case.
"""

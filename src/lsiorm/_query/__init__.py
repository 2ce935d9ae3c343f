"""Queries and scans, from value to plan to parameters to entities; pure, no I/O.

A query passes through these modules in this order:

- ``values``: ``query()`` and ``scan()``, immutable values with builder methods; ``plan()``
  hands a value to its planner.
- ``planner`` (``scan_planner`` for scans): decides what to read. ``index_choice`` fits every
  index (``keyrange`` for key conditions, ``multikey`` for multi-attribute keys, ``exactness``
  for sparse and shared indexes, ``projection`` for what an index returns) and picks one;
  ``collection`` groups entity types into requests; ``fallback`` turns unanswered key
  conditions into filters.
- ``compile``: writes each chosen request as Query or Scan parameters, with the one ``Limit``
  rule.
- `lsiorm._ops.reads` sends the requests, then ``decode`` reads items into entities; during a
  re-keying, ``rekeying`` reads both key forms of an entity's items and merges them.

Beside them: ``plan`` holds the values a planner returns, ``explain`` prints a plan and
``cursor`` encodes positions in its requests. Imports point from ``values`` down to ``plan``
and ``cursor``, never back (``tests/package/test_layers.py`` checks it, type-only imports
included).
"""

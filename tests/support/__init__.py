"""What several test files share, kept once so that none declares its own copy.

- ``models``: declarations used by more than one test file (the forum of the DynamoDB LSI
  guide, the key jobs' document in two releases, orders, goals, sensor readings, the shop,
  a TTL cache, and the entities that a unit file and an engine file of one feature share).
- ``tables``: tables made for one test or one module and deleted after it.
- ``fakes``: a stand-in for botocore's DynamoDB client that answers from a script.
- ``faults``: the fault-injecting proxy in front of an engine, and its lost-answer hook.
- ``jobs``: helpers of the key-job tests (a write log that can kill a job, reading a table back,
  an app module that workers in other processes import).
- ``writers``: concurrent writers that set, add, remove, delete and re-create items while a
  job runs, with a model of what the table must hold after it.
- ``exports``: DynamoDB exports to S3 written by hand from a table (a folder, or a bucket).
- ``oracles``: what DynamoDB would answer, computed by hand.
- ``outcomes``: values compared with the type of every leaf, for differential tests.
- ``strategies``: hypothesis strategies for stored values, and the lowest key texts.
- ``cli``: the command line's app modules, the fixtures that write them, and a way to run it.
- ``cursors``: reading and re-signing cursors, for the tests that edit them.
- ``audits``: item collections sized by hand, for the collection audit.
- ``sweeps``: every public session method called once, for the public-error tests.
- ``paths``: the repository's folders, for the checks that read docs, examples and sources.

The suite's fixtures (``backend``, ``endpoint_url``, ``session``, ...) are in ``conftest.py``,
on top of lsiorm's own pytest plugin; it loads ``cli`` as a plugin for its fixtures.
"""

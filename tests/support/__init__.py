"""What several test files share, kept once so that none declares its own copy.

- ``models``: declarations used by more than one test file (the forum of the DynamoDB LSI
  guide, the key jobs' document in two releases, orders, goals, sensor readings, the shop,
  a TTL cache, and the entities that a unit file and an engine file of one feature share).
- ``tables``: tables made for one test or one module and deleted after it.
- ``fakes``: a stand-in for botocore's DynamoDB client that answers from a script, and the
  ``ClientError`` of an error code.
- ``otel``: OpenTelemetry's SDK with in-memory spans and metrics (``Recording``, the ``otel``
  fixture) and a hook that counts the requests sent, for the telemetry tests.
- ``faults``: the fault-injecting proxy in front of an engine, and a session whose first
  answer is lost through lsiorm's public fault injection.
- ``jobs``: helpers of the key-job tests (a write log that can kill a job, reading a table back,
  an app module that workers in other processes import).
- ``writers``: concurrent writers that set, add, remove, delete and re-create items while a
  job runs, with a model of what the table must hold after it.
- ``exports``: DynamoDB exports to S3 written by hand from a table (a folder, or a bucket).
- ``oracles``: what DynamoDB would answer, computed by hand.
- ``hooks``: a session hook that records every request with its response.
- ``outcomes``: values compared with the type of every leaf, for differential tests.
- ``strategies``: hypothesis strategies for stored values, and the lowest key texts.
- ``cli``: the command line's app modules, the fixtures that write them, and a way to run it.
- ``cursors``: reading and re-signing cursors, for the tests that edit them.
- ``audits``: item collections sized by hand, for the collection audit.
- ``sweeps``: every public session method called once, for the public-error tests.
- ``paths``: the repository's folders, for the checks that read docs, examples and sources.
- ``apps``: running pytest on a user's app in a folder and a process of its own (the plugin's
  sample shop, and ``tests/sample_app``: a notes app whose own tests break DynamoDB on purpose).

The suite's fixtures (``backend``, ``endpoint_url``, ``session``, ...) are in ``conftest.py``,
on top of lsiorm's own pytest plugin; it loads ``cli`` as a plugin for its fixtures.
"""

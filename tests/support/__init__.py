"""What several test files share, kept once so that none declares its own copy.

- ``models``: declarations used by more than one test file (the forum of the DynamoDB LSI
  guide, the key jobs' document in two releases, orders, goals, sensor readings).
- ``tables``: tables made for one test or one module and deleted after it.
- ``fakes``: a stand-in for botocore's DynamoDB client that answers from a script.
- ``faults``: the fault-injecting proxy in front of an engine, and its lost-answer hook.
- ``jobs``: helpers of the key-job tests (a write log that can kill a job, reading a table back).
- ``oracles``: what DynamoDB would answer, computed by hand.

The suite's fixtures (``backend``, ``endpoint_url``, ``session``, ...) are in ``conftest.py``,
on top of lsiorm's own pytest plugin.
"""

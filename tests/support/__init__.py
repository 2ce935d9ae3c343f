"""What the test files share, so that none declares its own copy.

- ``models``: entity and table declarations used by several test files (the forum's
  ``Thread``, the key jobs' ``Doc``, orders, ...).
- ``fakes``: stand-ins for botocore's DynamoDB client that answer from a script.
- ``faults``: the fault-injecting proxy in front of an engine, and its hooks.
- ``jobs``: helpers of the key-job tests (a write log that can kill a job, reading a table back).
- ``tables``: creating a table for one test and deleting it after.

The suite's fixtures (``backend``, ``endpoint_url``, ``session``, ...) are in ``conftest.py``.
"""

"""The key jobs: work units, their ledger in DynamoDB, the rate budget, the engine that runs
units anywhere, and the jobs built on it. Operations only: they yield steps, no I/O.

A job passes through these modules in this order:

- ``units``: work units as plain values (scan segments, partitions, export files);
  ``resumable``: positions, progress and what every job shares; ``scans``: a job's scan, what
  it reads and its price; ``tally_scan``: a scan that only counts.
- ``ledger_items``: the ledger's items declared as lsiorm entities, bound to the ledger's
  table at run time; ``ledger`` (``memory_ledger`` for read-only jobs in one process): runs,
  units, leases and exact counts, kept in DynamoDB through lsiorm's own puts, updates,
  transactions and queries; ``budget``: the rate budget every worker shares through it;
  ``pacing``: each worker's pacing per resource, driven by the throttles' reasons (hot
  partition keys, the table).
- ``engine``: claims a unit, reads it page by page, hands each item to the job's kind, commits
  the position with the counts; ``watch`` follows the units sent to an executor; ``options``
  says how a job runs (here or on an executor, its budget, its ledger); ``catalog`` runs a unit
  from its declaration in another process.
- The jobs: ``key_audit`` (are stored keys current?), ``backfill`` (rewrite stale keys),
  ``relief`` (move a collection's items), ``adoption`` (sort a table another tool wrote
  against the declarations), ``orphans`` (delete the S3 objects of offloaded values no item
  references); ``write_tally`` is what a writing job keeps of a page.

Imports point down: the jobs import the engine, the engine the ledger and units, and the whole
package imports only ``lsiorm._ops`` and the pure layers below it, never ``lsiorm._migration``
(``tests/package/test_layers.py`` checks it). A kind of another layer reaches the catalog as a
`catalog.UnitSource` given by its caller.
"""

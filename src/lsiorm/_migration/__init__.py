"""Online table migration: copy a live table into a new one, catch up from its stream, verify,
write both during the cut-over. Operations only: they yield steps, no I/O.

A migration passes through these modules in this order:

- ``plan``: the pure plan and its refusals, the state kept in the ledger, the reports;
  ``state_items``: the migration's items in the ledger (its state, its dual writes) declared
  as lsiorm entities, bound to the ledger's table at run time.
- ``phases``: the whole (open, copy, catch up, verify, switch, abandon), resumable from the
  state.
- ``table_copy``: the job kinds of the copy and the verification (items re-derived through the
  declaration, copied on condition, compared with the destination).
- ``run``: what the phases share (the migration in progress, its job runs in the ledger).
- ``stream_replay``: the stream side: shards in lineage order, reading records, the pure
  replay rule and its proof.
- ``catch_up``: the catch-up as a job: every shard a unit with its position in the ledger,
  shards in parallel on the executor, parents before children, records older than the copy
  read but not applied.
- ``verify``: the verification, two job runs resumable per unit.
- ``catalog``: the migration's runs for a worker elsewhere (`lsiorm._jobs.catalog.UnitSource`).
- ``dual_plan`` and ``dual_writes``: each write to the source and its re-derived image in one
  transaction during the cut-over, planned purely, sent by a session route.

Imports point down: this package builds on ``lsiorm._jobs`` (units, ledger, rate budget,
engine), ``lsiorm._ops`` and the pure layers, and nothing below imports it
(``tests/package/test_layers.py`` checks it).
"""

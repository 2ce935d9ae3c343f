"""The library's operations: each request users make, as a generator that yields steps.

An operation passes through these modules in this order:

- ``steps``: the whole contract with the drivers (`Call`, `Sleep`, `Gather`, `Emit`).
- ``pipeline``: the path of one API call: request limits, hooks (``hooks``), retries
  (``retry``), typed errors (``service_errors``), live table names (``naming``), consumed
  capacity (``meter``).
- ``pages``: the one page reader, which sends every paged Query and Scan (each described by a
  `lsiorm._requests.pages.PagedRead`), a page at a time or to the end; ``stream_pages``: the
  stream reader, which lists a DynamoDB stream's shards and reads a shard's records page by
  page (described in `lsiorm._requests.stream_pages`), with expired iterators replaced and
  throttled reads waited out.
- The operations: ``items`` (put, get, update, delete), ``reads`` (query and scan plans, pages,
  cursors, merges), ``batch``, ``transactions``, ``tables`` (create, delete, check, apply a
  table's settings).
- ``deadline``: a call's ``timeout=`` around any operation; ``stream_marks``: the marks of a
  stream handler's idempotency (which records were applied).
- ``rekeying``: a write that meets an item still in an older key form moves it first;
  ``unchanged``: sends the writes guarded by the condition that an item is as it was read.
- The guard: ``collection_guard`` watches item-collection sizes, ``audit`` reads them from the
  table; ``reserved`` names the partition the jobs' ledger lives in, which every reader of a
  whole table leaves out.
- Protected fields: ``request_sealing`` seals what a request writes and ``protection`` opens
  what a response holds (encryption with KMS data keys, S3 objects), inside ``pipeline``;
  ``data_keys`` is a session's cache of data keys; ``offload_loads`` fetches the lazy offloaded
  values an entity was read with (``session.load``).

Imports point down: operations import the pipeline, the pipeline the steps, and the package
imports only the pure layers (``_model``, ``_conditions``, ``_requests``, ``_query``), whose
builders give every request its parameters: an operation only sends them. The key
jobs (``lsiorm._jobs``) and the migration (``lsiorm._migration``) are built on these
operations, never the other way round (``tests/package/test_layers.py`` checks it).
"""

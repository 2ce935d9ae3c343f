"""A table's reserved partition: where lsiorm's key jobs keep their ledger unless told otherwise.

The jobs' ledger (`lsiorm._jobs.ledger`) lives by default in one partition of the job's own
table, ``~lsiorm#jobs``. Its items are lsiorm's, not the table's: every reader of the whole
table (the key jobs, adoption, the collection audit, a migration's copy) leaves them out.
"""

from __future__ import annotations

from lsiorm._model.schema import Table

__all__ = ["NAMESPACE", "reserved_partition"]

NAMESPACE = "~lsiorm#jobs"


def reserved_partition(table: Table) -> dict[str, str] | None:
    """The partition key value (wire) of ``table``'s reserved partition; None when its
    partition key is not a string (no ledger can be there)."""
    return {"S": NAMESPACE} if table.partition_key.type == "S" else None

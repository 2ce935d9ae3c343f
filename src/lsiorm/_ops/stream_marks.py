"""The marks of a stream handler's idempotency: which stream records were already applied.

A mark is one item per applied record, keyed by the record's ``eventID`` (unique per stream
record, and the same on every redelivery): partition key ``lsiorm#stream#<eventID>`` (and
sort key ``lsiorm#stream`` when the table has one), holding the record's sequence number and
when it was applied, and, when the table declares a ``ttl_attribute``, when the mark may
expire. A batch's marks are read first, consistently (`applied_events`); after the handler's
function succeeds for a record, its mark is written only where there is none (`mark_applied`),
so two invocations that ran the same record both learn it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from lsiorm._model.schema import Table
from lsiorm._ops.pipeline import Context, call
from lsiorm._ops.steps import Operation, Sleep
from lsiorm.errors import BatchGetIncompleteError, ConditionFailedError, ValidationError

__all__ = ["MARK_PREFIX", "applied_events", "check_marks_table", "mark_applied", "mark_key"]

#: The partition key text of a mark, before the record's eventID.
MARK_PREFIX: Final = "lsiorm#stream#"
_SORT_VALUE: Final = "lsiorm#stream"
_BATCH_GET_LIMIT: Final = 100
_UNPROCESSED_ROUNDS: Final = 8


def check_marks_table(table: Table) -> None:
    """Refuse a table whose key cannot hold marks (rule ``stream.idempotency-table``)."""
    keys = [table.partition_key, *([table.sort_key] if table.sort_key is not None else [])]
    if any(k.type != "S" for k in keys):
        raise ValidationError(
            "stream.idempotency-table",
            f"Table {table.name!r} cannot hold a stream handler's marks: its key attributes "
            "must be strings (a mark's key is the record's eventID).",
            table=table.name,
        )


def mark_key(table: Table, event_id: str) -> dict[str, Any]:
    """The wire key of the mark of the record ``event_id``."""
    key: dict[str, Any] = {table.partition_key.name: {"S": MARK_PREFIX + event_id}}
    if table.sort_key is not None:
        key[table.sort_key.name] = {"S": _SORT_VALUE}
    return key


def applied_events(ctx: Context, table: Table, event_ids: Sequence[str]) -> Operation[set[str]]:
    """Which of these records have a mark (read consistently, 100 keys a request)."""
    found: set[str] = set()
    wanted = list(dict.fromkeys(e for e in event_ids if e))
    partition = table.partition_key.name
    for start in range(0, len(wanted), _BATCH_GET_LIMIT):
        keys = [mark_key(table, e) for e in wanted[start : start + _BATCH_GET_LIMIT]]
        request: dict[str, Any] = {
            table.name: {"Keys": keys, "ConsistentRead": True, "ProjectionExpression": "#k"},
        }
        request[table.name]["ExpressionAttributeNames"] = {"#k": partition}
        for attempt in range(_UNPROCESSED_ROUNDS):
            response = yield from call(ctx, "BatchGetItem", {"RequestItems": request}, (table,))
            for item in (response.get("Responses") or {}).get(table.name) or ():
                text = (item.get(partition) or {}).get("S", "")
                found.add(text.removeprefix(MARK_PREFIX))
            request = response.get("UnprocessedKeys") or {}
            if not request:
                break
            yield Sleep(min(0.05 * 2**attempt, 1.0))
        else:
            unread = request.get(table.name, {}).get("Keys") or []
            raise BatchGetIncompleteError(
                f"DynamoDB left marks of table {table.name!r} unread {_UNPROCESSED_ROUNDS} "
                "times in a row; the batch is not handled (Lambda delivers it again).",
                unprocessed=unread,
                found=sorted(found),
            )
    return found


def mark_applied(
    ctx: Context,
    table: Table,
    event_id: str,
    sequence_number: str,
    now: float,
    keep_seconds: float,
) -> Operation[bool]:
    """Write the mark of an applied record; False when one was there already (another run
    applied the record too, or an earlier attempt of this write was stored and its answer
    lost)."""
    item: dict[str, Any] = {
        **mark_key(table, event_id),
        "sequence": {"S": sequence_number},
        "applied_at": {"N": str(int(now))},
    }
    if table.ttl_attribute is not None:
        item[table.ttl_attribute] = {"N": str(int(now + keep_seconds))}
    params = {
        "TableName": table.name,
        "Item": item,
        "ConditionExpression": "attribute_not_exists(#k)",
        "ExpressionAttributeNames": {"#k": table.partition_key.name},
    }
    try:
        yield from call(ctx, "PutItem", params, (table,))
    except ConditionFailedError:
        return False
    return True

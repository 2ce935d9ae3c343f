"""Table names per deployment: the declared name in code, the resolved name on the wire.

A session may resolve every declared table name (``Table("Shop")``) to the name of the table
it really talks to (``"dev-Shop"``), through a prefix or any function. Operations, hooks and
the collection watcher work with declared names; `to_wire` renames the tables of one
request just before it is sent, and `from_wire` renames them back in its response, so
that every request builder stays unaware of deployments.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["NameResolver", "TableNames", "from_wire", "prefixed", "to_wire"]

#: Maps a declared table name to the name of the live table.
NameResolver = Callable[[str], str]

# Where a table name appears as a dict key in a response, by operation.
_KEYED_RESPONSES = ("Responses", "UnprocessedItems", "UnprocessedKeys")
_KEYED_METRICS_OPERATIONS = frozenset({"BatchWriteItem", "TransactWriteItems"})


def prefixed(prefix: str) -> NameResolver:
    """Return a resolver that puts ``prefix`` in front of every declared name."""

    def resolve(name: str) -> str:
        return f"{prefix}{name}"

    return resolve


class TableNames:
    """A session's resolver, which remembers the declared name of each live name it gave.

    Consumed capacity comes back under the live name; `declared` names it back the way
    everything else a session reports does (a live name never resolved is returned as is).
    """

    def __init__(self, resolve: NameResolver) -> None:
        self._resolve = resolve
        self._declared: dict[str, str] = {}

    def __call__(self, name: str) -> str:
        live = self._resolve(name)
        self._declared[live] = name
        return live

    def declared(self, live: str) -> str:
        """The declared name of a live table this resolver named (else ``live`` itself)."""
        return self._declared.get(live, live)


def to_wire(
    params: Mapping[str, Any], resolve: NameResolver
) -> tuple[dict[str, Any], dict[str, str]]:
    """Return the request params with every table name resolved, and a wire->declared map."""
    names: dict[str, str] = {}

    def wire(name: Any) -> Any:
        if not isinstance(name, str):
            return name
        resolved = resolve(name)
        names[resolved] = name
        return resolved

    out = dict(params)
    if "TableName" in out:
        out["TableName"] = wire(out["TableName"])
    requests = out.get("RequestItems")
    if isinstance(requests, Mapping):
        out["RequestItems"] = {wire(name): spec for name, spec in requests.items()}
    actions = out.get("TransactItems")
    if isinstance(actions, list):
        out["TransactItems"] = [_wire_action(action, wire) for action in actions]
    return out, names


def _wire_action(action: Any, wire: Callable[[Any], Any]) -> Any:
    if not isinstance(action, Mapping):
        return action
    renamed: dict[str, Any] = {}
    for kind, body in action.items():
        if isinstance(body, Mapping) and "TableName" in body:
            body = {**body, "TableName": wire(body["TableName"])}
        renamed[kind] = body
    return renamed


def from_wire(operation: str, response: dict[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    """Return the response with the wire names of `to_wire` turned back into declared ones."""
    if not names:
        return response

    def declared(name: Any) -> Any:
        return names.get(name, name) if isinstance(name, str) else name

    out = dict(response)
    for field in _KEYED_RESPONSES:
        value = out.get(field)
        if isinstance(value, Mapping):
            out[field] = {declared(name): v for name, v in value.items()}
    metrics = out.get("ItemCollectionMetrics")
    if operation in _KEYED_METRICS_OPERATIONS and isinstance(metrics, Mapping):
        out["ItemCollectionMetrics"] = {declared(name): v for name, v in metrics.items()}
    capacity = out.get("ConsumedCapacity")
    if isinstance(capacity, Mapping):
        out["ConsumedCapacity"] = _with_declared_name(capacity, declared)
    elif isinstance(capacity, list):
        out["ConsumedCapacity"] = [_with_declared_name(c, declared) for c in capacity]
    for field in ("Table", "TableDescription"):
        value = out.get(field)
        if isinstance(value, Mapping):
            out[field] = _with_declared_name(value, declared)
    return out


def _with_declared_name(value: Any, declared: Callable[[Any], Any]) -> Any:
    if isinstance(value, Mapping) and "TableName" in value:
        return {**value, "TableName": declared(value["TableName"])}
    return value

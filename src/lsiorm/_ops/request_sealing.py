"""What a request writes, sealed: the request side of protected fields (`lsiorm._ops.protection`
holds the values, items and responses).

`seal_request` is called by `send_once` (`lsiorm._ops.pipeline`) with every request the session
sends. It replaces each protected attribute's plain value in what the request writes
(``PutItem``, the puts of a batch or a transaction, the ``SET`` of an ``UpdateItem``) with its
envelope, and refuses an update that would use a protected attribute in any other way than a
whole ``SET`` or a ``REMOVE`` (``protect.update``, `update_targets`).

A condition may compare values that were read opened (a job's guard that an item is unchanged,
a migration's catch-up comparing the destination with the source's old image). DynamoDB holds
envelopes, so each opened value is compared as stored: its own envelope when it was read from
this very item and attribute; otherwise (a value read elsewhere) the item's current envelope,
read and opened, when its plain value is equal, so that DynamoDB still checks that the item
holds that very envelope (see `_stored_conditions`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from lsiorm._model.protection import FieldProtection, table_protection
from lsiorm._model.schema import Table
from lsiorm._model.sealing import Binding
from lsiorm._model.wire import same_item
from lsiorm._ops.protection import (
    OpenedValue,
    Protection,
    item_key,
    open_item,
    protects_any,
    seal_item,
    seal_value,
    table_of,
)
from lsiorm._ops.retry import RetryPolicy, run_with_retries
from lsiorm._ops.steps import Call, Operation
from lsiorm._requests.reads import consistent_get, projection
from lsiorm.errors import ProtectionError, ValidationError

__all__ = ["seal_request", "update_targets"]

_CLAUSE: Final = re.compile(r"\b(SET|REMOVE|ADD|DELETE)\b", re.IGNORECASE)
_PLACEHOLDER: Final = re.compile(r"^:[A-Za-z0-9_]+$")
_NAME_TOKEN: Final = re.compile(r"#[A-Za-z0-9_]+|[A-Za-z_][A-Za-z0-9_]*")


def _split_top(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _resolve(token: str, names: Mapping[str, str]) -> str:
    return names.get(token, token) if token.startswith("#") else token


def _head(path: str, names: Mapping[str, str]) -> tuple[str, bool]:
    """The top attribute a path names, and whether the path goes inside it."""
    match = _NAME_TOKEN.match(path.strip())
    if match is None:
        return "", True
    rest = path.strip()[match.end() :].strip()
    return _resolve(match.group(0), names), bool(rest)


def update_targets(
    expression: str, names: Mapping[str, str], protected: Mapping[str, FieldProtection]
) -> dict[str, str]:
    """The value placeholders an update expression SETs protected attributes to (placeholder
    -> attribute); a protected attribute used any other way than a whole SET or a REMOVE is
    refused (``protect.update``)."""
    marks = list(_CLAUSE.finditer(expression))
    targets: dict[str, str] = {}
    for n, mark in enumerate(marks):
        clause = mark.group(1).upper()
        end = marks[n + 1].start() if n + 1 < len(marks) else len(expression)
        for part in _split_top(expression[mark.end() : end]):
            if clause == "SET":
                lhs, _, rhs = part.partition("=")
                attr, inside = _head(lhs, names)
                rhs = rhs.strip()
                uses = {_resolve(t, names) for t in re.findall(r"#[A-Za-z0-9_]+", rhs)}
                if uses & set(protected):
                    _refuse_update(sorted(uses & set(protected))[0], protected)
                if attr in protected:
                    if inside or not _PLACEHOLDER.match(rhs):
                        _refuse_update(attr, protected)
                    targets[rhs] = attr
            elif clause in ("ADD", "DELETE"):
                attr, _ = _head(part.split()[0] if part.split() else part, names)
                if attr in protected:
                    _refuse_update(attr, protected)
            else:  # REMOVE: a whole attribute is fine, a part of a protected one is not
                attr, inside = _head(part, names)
                if attr in protected and inside:
                    _refuse_update(attr, protected)
    return targets


def _refuse_update(attr: str, protected: Mapping[str, FieldProtection]) -> None:
    raise ValidationError(
        "protect.update",
        f"The attribute {attr!r} is {protected[attr].describe()}, so an update can only set it "
        "whole or remove it (not ADD, DELETE, if_not_exists, list_append, nor a path inside "
        "it).",
    )


def _seal_values(
    retry: RetryPolicy,
    protection: Protection,
    values: Mapping[str, Any],
    targets: Mapping[str, str],
    specs: Mapping[str, FieldProtection],
    key: Mapping[str, Any],
    name: str,
) -> Operation[dict[str, Any]]:
    """ExpressionAttributeValues with the SET values of protected attributes sealed, and the
    opened values a condition compares (a job's unchanged-guard) put back as stored."""
    out: dict[str, Any] = {}
    for placeholder, av in values.items():
        attr = targets.get(placeholder)
        if attr is not None:
            binding = Binding(name, dict(key), attr)
            out[placeholder] = yield from seal_value(retry, protection, specs[attr], av, binding)
        else:
            out[placeholder] = av  # a condition's opened values: see _stored_conditions
    return out


@dataclass(frozen=True)
class _Sealing:
    """What sealing one request needs: the session's retries, its keyring at work, the declared
    tables the request touches, and the live name of a declared one (for the reads of
    `_stored_conditions`)."""

    retry: RetryPolicy
    protection: Protection
    tables: Sequence[Table]
    live: Callable[[str], str]


def _seal_update(sealing: _Sealing, params: Mapping[str, Any]) -> Operation[dict[str, Any]]:
    """An Update (an UpdateItem, or a transaction's) with its protected values sealed."""
    retry, protection = sealing.retry, sealing.protection
    table = table_of(sealing.tables, params.get("TableName"))
    values = params.get("ExpressionAttributeValues")
    if table is None or not values:
        return dict(params)
    specs = table_protection(table)
    targets: dict[str, str] = {}
    if specs and "UpdateExpression" in params:
        names = params.get("ExpressionAttributeNames") or {}
        targets = update_targets(str(params["UpdateExpression"]), names, specs)
        if (
            not protection.keyring.can_decrypt
            and params.get("ReturnValues") in ("ALL_NEW", "ALL_OLD", "UPDATED_OLD")
            and any(s.encrypted for s in specs.values())
        ):
            raise ProtectionError(
                "protect.mode",
                f"An update of {params['TableName']!r} returns the item, which an encrypt-only "
                "keyring cannot read; write the entity whole with put().",
            )
    key = params.get("Key") or {}
    if targets:
        sealed = yield from _seal_values(
            retry, protection, values, targets, specs, key, params["TableName"]
        )
        params = {**params, "ExpressionAttributeValues": sealed}
    return (yield from _stored_conditions(sealing, params, key))


def _stored_conditions(
    sealing: _Sealing, params: Mapping[str, Any], key: Mapping[str, Any]
) -> Operation[dict[str, Any]]:
    """Params whose condition values compare opened values as they are stored.

    An opened value read from this very item and attribute compares its own envelope. One read
    elsewhere (a migration's catch-up compares the destination with the source's old image) is
    compared by its plain value: the item's current envelope is read and opened, and compared
    in its place when the plain values are equal (so DynamoDB checks that it is still that
    envelope); otherwise the foreign envelope, which the item cannot hold, fails the condition
    as the plain comparison would."""
    values = params.get("ExpressionAttributeValues")
    if not values or not any(isinstance(v, OpenedValue) for v in values.values()):
        return dict(params)
    name = str(params.get("TableName"))
    opened = {k: v for k, v in values.items() if isinstance(v, OpenedValue)}
    foreign = {
        k: v
        for k, v in opened.items()
        if v.binding != Binding(name, dict(key), v.binding.attribute)
    }
    current: Mapping[str, Any] = {}
    table = table_of(sealing.tables, name)
    if foreign and table is not None and key:
        current = yield from _current(
            sealing, table, name, key, {v.binding.attribute for v in foreign.values()}
        )
    stored = dict(values)
    for placeholder, av in opened.items():
        mine = current.get(av.binding.attribute) if placeholder in foreign else None
        if isinstance(mine, OpenedValue) and same_item({"v": dict(mine)}, {"v": dict(av)}):
            stored[placeholder] = mine.stored
        else:
            stored[placeholder] = av.stored
    return {**params, "ExpressionAttributeValues": stored}


def _current(
    sealing: _Sealing,
    table: Table,
    name: str,
    key: Mapping[str, Any],
    attributes: set[str],
) -> Operation[Mapping[str, Any]]:
    """The named attributes of the item at ``key`` as it is now, opened (read consistently)."""
    wanted = sorted(attributes | set(key))
    params = {**consistent_get(sealing.live(name), key), **projection(wanted)}

    def attempt() -> Operation[dict[str, Any]]:
        response: dict[str, Any] = yield Call("GetItem", params)
        return response

    response = yield from run_with_retries(sealing.retry, attempt, what="GetItem")
    item = response.get("Item")
    if item is None:
        return {}
    specs = table_protection(table)
    return (yield from open_item(sealing.retry, sealing.protection, table, name, item, specs))


def _seal_put(sealing: _Sealing, params: Mapping[str, Any]) -> Operation[dict[str, Any]]:
    name = params.get("TableName")
    table = table_of(sealing.tables, name)
    out = dict(params)
    if table is not None and table_protection(table):
        out["Item"] = yield from seal_item(
            sealing.retry,
            sealing.protection,
            table,
            str(name),
            params["Item"],
            table_protection(table),
        )
    key = item_key(table, params["Item"]) if table is not None else None
    return (yield from _stored_conditions(sealing, out, key or {}))


def _seal_transaction(sealing: _Sealing, params: Mapping[str, Any]) -> Operation[dict[str, Any]]:
    actions = []
    for action in params.get("TransactItems") or ():
        ((kind, body),) = action.items()
        if kind == "Put":
            body = yield from _seal_put(sealing, body)
        elif kind == "Update":
            body = yield from _seal_update(sealing, body)
        else:
            body = yield from _stored_conditions(sealing, body, body.get("Key") or {})
        actions.append({kind: body})
    return {**params, "TransactItems": actions}


def _seal_batch(sealing: _Sealing, params: Mapping[str, Any]) -> Operation[dict[str, Any]]:
    retry, protection = sealing.retry, sealing.protection
    out: dict[str, list[Any]] = {}
    for name, requests in (params.get("RequestItems") or {}).items():
        table = table_of(sealing.tables, name)
        specs = table_protection(table) if table is not None else {}
        sealed = []
        for request in requests:
            put = request.get("PutRequest")
            if put is not None and table is not None and specs:
                item = yield from seal_item(retry, protection, table, name, put["Item"], specs)
                request = {"PutRequest": {**put, "Item": item}}
            sealed.append(request)
        out[name] = sealed
    return {**params, "RequestItems": out}


def _same_name(name: str) -> str:
    return name


def seal_request(
    retry: RetryPolicy,
    protection: Protection,
    operation: str,
    params: dict[str, Any],
    tables: Sequence[Table],
    live: Callable[[str], str] | None = None,
) -> Operation[dict[str, Any]]:
    """The request to send: protected values sealed (see the module); a request sent again
    sends what it sent the first time, while that is young enough. ``live`` gives the live
    name of a declared table (None: the declared name is the live one)."""
    if not protects_any(tables):
        return params
    again = protection.recalled(params)
    if again is not None:
        return again
    sealing = _Sealing(retry, protection, tables, live or _same_name)
    sealed: dict[str, Any]
    if operation == "PutItem":
        sealed = yield from _seal_put(sealing, params)
    elif operation == "UpdateItem":
        sealed = yield from _seal_update(sealing, params)
    elif operation == "BatchWriteItem":
        sealed = yield from _seal_batch(sealing, params)
    elif operation == "TransactWriteItems":
        sealed = yield from _seal_transaction(sealing, params)
    elif operation == "DeleteItem":
        sealed = yield from _stored_conditions(sealing, params, params.get("Key") or {})
    else:
        return params
    protection.remember(params, sealed)
    return sealed

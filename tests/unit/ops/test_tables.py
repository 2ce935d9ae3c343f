"""Table operations run against canned replies: create_table waits, then enables TTL once."""

from __future__ import annotations

from typing import Any

import pytest

from lsiorm import Table
from lsiorm._ops import tables as table_ops
from lsiorm._ops.pipeline import Context
from lsiorm._ops.steps import Call, Done, Operation, Sleep, advance
from lsiorm.errors import ServiceValidationError
from support.models import TTL_CACHE


def ttl(status: str, attribute: str | None = None) -> dict[str, Any]:
    description: dict[str, Any] = {"TimeToLiveStatus": status}
    if attribute is not None:
        description["AttributeName"] = attribute
    return {"TimeToLiveDescription": description}


def run_script(
    op: Operation[Any], replies: dict[str, list[Any]]
) -> tuple[Any, list[tuple[str, dict[str, Any]]]]:
    """Run an operation against canned replies; return its result and the requests it sent."""
    sent: list[tuple[str, dict[str, Any]]] = []
    step = advance(op)
    while not isinstance(step, Done):
        if isinstance(step, Sleep):
            step = advance(op)
            continue
        assert isinstance(step, Call), step
        sent.append((step.operation, step.params))
        reply = replies[step.operation].pop(0)
        step = advance(op, error=reply) if isinstance(reply, BaseException) else advance(op, reply)
    return step.value, sent


ACTIVE = {"Table": {"TableStatus": "ACTIVE"}}


def test_create_table_waits_then_enables_ttl_even_without_wait() -> None:
    created, sent = run_script(
        table_ops.create_table(Context(), TTL_CACHE, wait=False),
        {
            "CreateTable": [{}],
            "DescribeTable": [{"Table": {"TableStatus": "CREATING"}}, ACTIVE],
            "DescribeTimeToLive": [ttl("DISABLED")],
            "UpdateTimeToLive": [{}],
        },
    )
    assert created is True
    assert [operation for operation, _ in sent] == [
        "CreateTable",
        "DescribeTable",
        "DescribeTable",
        "DescribeTimeToLive",
        "UpdateTimeToLive",
    ]
    assert sent[-2][1] == {"TableName": "TtlCache"}
    assert sent[-1][1] == TTL_CACHE.update_ttl_request()


def test_enable_ttl_leaves_ttl_that_is_on_alone() -> None:
    for reply in (ttl("ENABLED", "expires_at"), ttl("ENABLED", "other"), ttl("DISABLING", "x")):
        enabled, sent = run_script(
            table_ops.enable_ttl(Context(), TTL_CACHE), {"DescribeTimeToLive": [reply]}
        )
        assert enabled is False
        assert [operation for operation, _ in sent] == ["DescribeTimeToLive"]


def test_enable_ttl_that_another_writer_just_enabled_is_no_error() -> None:
    already = ServiceValidationError(
        "TimeToLive is already enabled", code="ValidationException", operation="UpdateTimeToLive"
    )
    enabled, _ = run_script(
        table_ops.enable_ttl(Context(), TTL_CACHE),
        {"DescribeTimeToLive": [ttl("DISABLED")], "UpdateTimeToLive": [already]},
    )
    assert enabled is False
    other = ServiceValidationError("something else", code="ValidationException")
    with pytest.raises(ServiceValidationError):
        run_script(
            table_ops.enable_ttl(Context(), TTL_CACHE),
            {"DescribeTimeToLive": [ttl("DISABLED")], "UpdateTimeToLive": [other]},
        )


def test_a_table_without_ttl_sends_no_ttl_request_on_create() -> None:
    plain = Table("NoTtl", "PK")
    _, sent = run_script(
        table_ops.create_table(Context(), plain, wait=False), {"CreateTable": [{}]}
    )
    assert [operation for operation, _ in sent] == ["CreateTable"]

"""Table(ttl_attribute=...): its declaration rules, its UpdateTimeToLive request, TTL drift."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import pytest
from pydantic import Field

from lsiorm import Entity, EpochSeconds, GlobalIndex, KeyAttribute, LocalIndex, Table
from lsiorm.errors import DeclarationError, ValidationError
from support.describe_table import describe
from support.models import TTL_CACHE


@pytest.mark.parametrize(
    "kwargs",
    [
        {"ttl_attribute": "PK"},
        {"ttl_attribute": "SK"},
        {"ttl_attribute": "LSI1SK", "local_indexes": [LocalIndex("Lsi1", KeyAttribute("LSI1SK"))]},
        {"ttl_attribute": "GPK", "global_indexes": [GlobalIndex("Gsi1", KeyAttribute("GPK"))]},
        {"ttl_attribute": "_type"},
        {"ttl_attribute": "kind", "type_attribute": "kind"},
        {"ttl_attribute": ""},
        {"ttl_attribute": "x" * 256},
    ],
)
def test_rule_table_ttl_attribute(kwargs: dict[str, Any]) -> None:
    with pytest.raises(DeclarationError) as caught:
        Table("TtlRules", "PK", "SK", **kwargs)
    assert caught.value.rule == "table.ttl-attribute"


def test_reserved_slots_take_a_ttl_attribute() -> None:
    table = Table.with_reserved_lsi_slots("TtlSlots", "PK", "SK", ttl_attribute="ttl")
    assert table.ttl_attribute == "ttl"
    with pytest.raises(DeclarationError) as caught:
        Table.with_reserved_lsi_slots("TtlSlots", "PK", "SK", ttl_attribute="LSI3SK")
    assert caught.value.rule == "table.ttl-attribute"


def declare(annotation: Any, **field: Any) -> type[Entity]:
    table = Table(f"ttl_{uuid.uuid4().hex[:8]}", "PK", "SK", ttl_attribute="expires_at")
    name = field.pop("name", "expires_at")
    namespace: dict[str, Any] = {"__annotations__": {"key": str, name: annotation}}
    if field:
        namespace[name] = Field(**field)
    return type(
        "Doc",
        (Entity,),
        namespace,
        table=table,
        keys={"PK": "D#{key}", "SK": "D"},
    )


@pytest.mark.parametrize(
    ("annotation", "field"),
    [
        (datetime, {}),
        (datetime | None, {"default": None}),
        (str, {}),
        (bool, {}),
        (float, {}),
        (datetime, {"name": "expiry", "alias": "expires_at"}),
        (datetime, {"name": "expiry", "serialization_alias": "expires_at"}),
    ],
)
def test_rule_ttl_field_must_be_stored_as_a_number(annotation: Any, field: dict[str, Any]) -> None:
    with pytest.raises(DeclarationError) as caught:
        declare(annotation, **field)
    assert caught.value.rule == "ttl.not-epoch-seconds"
    assert "never expire" in str(caught.value)


@pytest.mark.parametrize(
    ("annotation", "field"),
    [
        (EpochSeconds, {}),
        (EpochSeconds | None, {"default": None}),
        (int, {}),
        (int | None, {"default": None}),
        (EpochSeconds, {"name": "expiry", "alias": "expires_at"}),
        (datetime, {"name": "created"}),  # not the TTL attribute: anything goes
    ],
)
def test_numbers_are_fine_under_the_ttl_attribute(annotation: Any, field: dict[str, Any]) -> None:
    declare(annotation, **field)


def test_update_ttl_request() -> None:
    assert TTL_CACHE.update_ttl_request() == {
        "TableName": "TtlCache",
        "TimeToLiveSpecification": {"Enabled": True, "AttributeName": "expires_at"},
    }
    with pytest.raises(ValidationError) as caught:
        Table("NoTtl", "PK").update_ttl_request()
    assert caught.value.rule == "table.no-ttl-attribute"


def ttl(status: str, attribute: str | None = None) -> dict[str, Any]:
    description: dict[str, Any] = {"TimeToLiveStatus": status}
    if attribute is not None:
        description["AttributeName"] = attribute
    return {"TimeToLiveDescription": description}


@pytest.mark.parametrize(
    ("status", "attribute", "needed"),
    [
        ("DISABLED", None, True),
        ("ENABLED", "expires_at", False),
        ("ENABLING", "expires_at", False),
        ("ENABLED", "other", False),
        ("DISABLING", "expires_at", False),
    ],
)
def test_ttl_needs_enabling_only_when_disabled(
    status: str, attribute: str | None, needed: bool
) -> None:
    assert TTL_CACHE.ttl_needs_enabling(ttl(status, attribute)) is needed
    assert Table("NoTtl", "PK").ttl_needs_enabling(ttl(status, attribute)) is False


@pytest.mark.parametrize(
    ("declared", "status", "attribute", "kinds", "words"),
    [
        ("expires_at", "ENABLED", "expires_at", [], ""),
        ("expires_at", "DISABLED", None, ["ttl-disabled"], "never expire"),
        ("expires_at", "ENABLING", "expires_at", ["ttl-enabling"], "being enabled"),
        ("expires_at", "DISABLING", "expires_at", ["ttl-disabling"], "being disabled"),
        ("expires_at", "ENABLED", "other", ["ttl-attribute"], "'other'"),
        ("expires_at", "ENABLING", "other", ["ttl-attribute"], "being enabled"),
        (None, "ENABLED", "other", ["ttl-undeclared"], "declare ttl_attribute='other'"),
        (None, "ENABLING", "other", ["ttl-undeclared"], "being enabled"),
        (None, "DISABLED", None, [], ""),
        (None, "DISABLING", "other", [], ""),
    ],
)
def test_ttl_drift(
    declared: str | None, status: str, attribute: str | None, kinds: list[str], words: str
) -> None:
    table = Table("TtlDrift", "PK", "SK", ttl_attribute=declared)
    report = table.check(describe(table.create_table_request()), ttl(status, attribute))
    assert [d.kind for d in report.drifts] == kinds
    assert words in str(report)
    assert report.ok is (not kinds)
    # Without a DescribeTimeToLive response only the table is compared.
    assert table.check(describe(table.create_table_request())).ok

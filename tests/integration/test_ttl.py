"""Time to live: the EpochSeconds type, Table(ttl_attribute=...), enabling TTL and checking it.

Pure tests compare values and request dicts; integration tests run on both engines.
"""

from __future__ import annotations

import calendar
import contextlib
import io
import sys
import textwrap
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from decimal import ROUND_FLOOR, Decimal
from pathlib import Path
from typing import Any

import pydantic
import pytest
from boto3.dynamodb.types import TypeSerializer
from hypothesis import given
from hypothesis import strategies as st
from pydantic import Field

from lsiorm import (
    AsyncSession,
    Entity,
    EpochSeconds,
    GlobalIndex,
    KeyAttribute,
    LocalIndex,
    Session,
    Table,
    cond,
    decode_item,
    gt,
    item_size,
    query,
)
from lsiorm._cli import EXIT_FOUND, EXIT_OK, main
from lsiorm._model.entity_meta import meta_of
from lsiorm._model.epoch import MAX_EPOCH_SECONDS, MIN_EPOCH_SECONDS, epoch_seconds
from lsiorm._model.item_encoding import encode_entity
from lsiorm._model.wire import attribute_value_size
from lsiorm._ops import tables as table_ops
from lsiorm._ops.pipeline import Context
from lsiorm._ops.steps import Call, Done, Operation, Sleep, advance
from lsiorm._requests.items import put_request
from lsiorm.errors import (
    ConditionFailedError,
    DeclarationError,
    ResourceNotFoundError,
    ServiceValidationError,
    ValidationError,
)
from lsiorm.testing import table_fixture
from support.tables import create_and_wait

UTC = timezone.utc
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

cache = Table("TtlCache", "PK", "SK", ttl_attribute="expires_at")


class Entry(Entity, table=cache, keys={"PK": "E#{name}", "SK": "V#{version:03d}"}):
    name: str
    version: int = 1
    value: str = ""
    expires_at: EpochSeconds | None = None


class Timed(Entity, table=cache, keys={"PK": "T#{topic}", "SK": "AT#{at}"}):
    """EpochSeconds in a key template, and as a required TTL field."""

    topic: str
    at: EpochSeconds
    expires_at: EpochSeconds


# -- the type -------------------------------------------------------------------------------------

offsets = st.timedeltas(
    min_value=timedelta(hours=-23, minutes=-59, seconds=-59),
    max_value=timedelta(hours=23, minutes=59, seconds=59),
).map(timezone)
aware = st.datetimes(
    min_value=datetime(2, 1, 1), max_value=datetime(9998, 12, 31), timezones=offsets
)


def truncated(value: datetime) -> datetime:
    return value.astimezone(UTC).replace(microsecond=0)


def stored(entity: Entity, attribute: str = "expires_at") -> Any:
    return entity.to_wire().get(attribute)


@given(aware)
def test_any_aware_datetime_is_stored_as_whole_epoch_seconds_and_reads_back_truncated(
    value: datetime,
) -> None:
    entry = Entry(name="k", expires_at=value)
    wire = entry.to_wire()
    # An oracle independent of the implementation: calendar.timegm of the UTC time tuple.
    assert wire["expires_at"] == {"N": str(calendar.timegm(value.astimezone(UTC).timetuple()))}
    back = decode_item(cache, wire)
    assert isinstance(back, Entry)
    assert back.expires_at == truncated(value)
    assert back.expires_at is not None
    assert back.expires_at.tzinfo is UTC
    assert back == entry  # validation already truncated: what is stored is what is held
    # decode(store(x)) is a fixed point.
    again = decode_item(cache, back.to_wire())
    assert again == back
    assert back.to_wire() == wire


@given(st.integers(MIN_EPOCH_SECONDS, MAX_EPOCH_SECONDS))
def test_an_int_epoch_validates_and_is_stored_unchanged(seconds: int) -> None:
    entry = Entry(name="k", expires_at=seconds)
    assert entry.expires_at == EPOCH + timedelta(seconds=seconds)
    assert stored(entry) == {"N": str(seconds)}
    assert entry.model_dump()["expires_at"] == seconds


@given(st.floats(min_value=MIN_EPOCH_SECONDS, max_value=MAX_EPOCH_SECONDS, allow_nan=False))
def test_a_float_or_decimal_epoch_is_floored_to_the_second(seconds: float) -> None:
    whole = int(Decimal(seconds).to_integral_value(rounding=ROUND_FLOOR))
    assert Entry(name="k", expires_at=seconds).expires_at == EPOCH + timedelta(seconds=whole)
    assert Entry(name="k", expires_at=Decimal(seconds)).expires_at == EPOCH + timedelta(
        seconds=whole
    )


def test_accepted_forms() -> None:
    moment = datetime(2030, 5, 1, 12, 0, 7, tzinfo=UTC)
    seconds = calendar.timegm(moment.timetuple())
    plus_two = timezone(timedelta(hours=2))
    for given_value in (
        moment,
        moment.replace(microsecond=999_999),
        moment.astimezone(plus_two),
        seconds,
        float(seconds) + 0.5,
        Decimal(seconds),
        str(seconds),
        "2030-05-01T12:00:07Z",
        "2030-05-01T14:00:07.25+02:00",
    ):
        assert Entry(name="k", expires_at=given_value).expires_at == moment, given_value
    # Before the epoch, truncation goes toward the past, as datetime's seconds do.
    assert Entry(name="k", expires_at=-0.5).expires_at == EPOCH - timedelta(seconds=1)
    assert stored(Entry(name="k", expires_at=-0.5)) == {"N": "-1"}


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (datetime(2030, 1, 1), "ambiguous"),
        ("2030-01-01T00:00:00", "ambiguous"),
        (True, "bool"),
        (float("nan"), "finite"),
        (float("inf"), "finite"),
        (MAX_EPOCH_SECONDS + 1, "years 1 to 9999"),
        ("soon", "neither"),
        (b"1", "expected"),
    ],
)
def test_refused_values_say_why(value: Any, why: str) -> None:
    with pytest.raises(pydantic.ValidationError, match=why):
        Entry(name="k", expires_at=value)


def test_naive_datetime_in_a_condition_is_a_typed_error() -> None:
    entry = Entry(name="k")
    with pytest.raises(ValidationError) as caught:
        put_request(entry, condition=cond("expires_at") < datetime(2030, 1, 1))
    assert caught.value.rule == "field.invalid"
    assert "ambiguous" in str(caught.value)


def test_none_is_absence() -> None:
    entry = Entry(name="k")
    assert "expires_at" not in entry.to_wire()
    back = decode_item(cache, entry.to_wire())
    assert isinstance(back, Entry)
    assert back.expires_at is None


def test_json_round_trip() -> None:
    entry = Entry(name="k", expires_at=datetime(2030, 1, 1, tzinfo=UTC))
    text = entry.model_dump_json()
    assert '"expires_at":1893456000' in text
    assert Entry.model_validate_json(text) == entry


@given(aware, aware)
def test_key_text_orders_as_the_values(a: datetime, b: datetime) -> None:
    meta = meta_of(Timed)
    later = datetime(2030, 1, 1, tzinfo=UTC)

    def key(value: datetime) -> str:
        entity = Timed(topic="t", at=value, expires_at=later)
        sort: str = meta.key({"topic": "t", "at": entity.at})["SK"]
        assert entity.to_wire()["SK"] == {"S": sort}
        return sort

    ka, kb = key(a), key(b)
    ta, tb = truncated(a), truncated(b)
    assert (ka < kb) == (ta < tb)
    assert (ka == kb) == (ta == tb)


def test_condition_and_filter_compare_numbers() -> None:
    moment = datetime(2030, 1, 1, tzinfo=UTC)
    request, _ = put_request(Entry(name="k"), condition=cond("expires_at") < moment)
    assert "<" in request["ConditionExpression"]
    assert {"N": "1893456000"} in request["ExpressionAttributeValues"].values()
    compiled = query(Entry).where(name="k").filter(expires_at=gt(moment)).compile()
    assert "FilterExpression" in compiled
    assert {"N": "1893456000"} in compiled["ExpressionAttributeValues"].values()


def test_stream_images_decode() -> None:
    moment = datetime(2030, 1, 1, tzinfo=UTC)
    wire = Entry(name="k", expires_at=moment).to_wire()
    # A writer that stored a fraction, and a plain image turned back with boto3's serializer.
    fractional = {**wire, "expires_at": {"N": "1893456000.75"}}
    back = decode_item(cache, fractional)
    assert isinstance(back, Entry)
    assert back.expires_at == moment
    plain = {"PK": "E#k", "SK": "V#001", "_type": "Entry", "name": "k", "version": 1}
    plain["expires_at"] = Decimal(1893456000)
    serialize = TypeSerializer().serialize
    image = {name: serialize(value) for name, value in plain.items()}
    assert decode_item(cache, image) == Entry(name="k", expires_at=moment)


def test_size_estimate_counts_a_number() -> None:
    entry = Entry(name="k", expires_at=datetime(2030, 1, 1, tzinfo=UTC))
    wire, size = encode_entity(entry)
    assert size == item_size(wire)
    without = Entry(name="k")
    value_size = attribute_value_size({"N": "1893456000"})
    assert size == item_size(without.to_wire()) + len("expires_at") + value_size
    assert value_size < len("2030-01-01T00:00:00.000000Z")


def test_epoch_seconds_of_the_datetime_range() -> None:
    assert epoch_seconds(datetime(1, 1, 1, tzinfo=UTC)) == MIN_EPOCH_SECONDS
    assert epoch_seconds(datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)) == (
        MAX_EPOCH_SECONDS
    )


# -- declaration rules ----------------------------------------------------------------------------


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


# -- request builders and drift (pure) ------------------------------------------------------------


def test_update_ttl_request() -> None:
    assert cache.update_ttl_request() == {
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
    assert cache.ttl_needs_enabling(ttl(status, attribute)) is needed
    assert Table("NoTtl", "PK").ttl_needs_enabling(ttl(status, attribute)) is False


def describe(table: Table) -> dict[str, Any]:
    request = table.create_table_request()
    return {
        "Table": {
            "KeySchema": request["KeySchema"],
            "AttributeDefinitions": request["AttributeDefinitions"],
            "BillingModeSummary": {"BillingMode": request["BillingMode"]},
        }
    }


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
    report = table.check(describe(table), ttl(status, attribute))
    assert [d.kind for d in report.drifts] == kinds
    assert words in str(report)
    assert report.ok is (not kinds)
    # Without a DescribeTimeToLive response only the table is compared.
    assert table.check(describe(table)).ok


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
        table_ops.create_table(Context(), cache, wait=False),
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
    assert sent[-1][1] == cache.update_ttl_request()


def test_enable_ttl_leaves_ttl_that_is_on_alone() -> None:
    for reply in (ttl("ENABLED", "expires_at"), ttl("ENABLED", "other"), ttl("DISABLING", "x")):
        enabled, sent = run_script(
            table_ops.enable_ttl(Context(), cache), {"DescribeTimeToLive": [reply]}
        )
        assert enabled is False
        assert [operation for operation, _ in sent] == ["DescribeTimeToLive"]


def test_enable_ttl_that_another_writer_just_enabled_is_no_error() -> None:
    already = ServiceValidationError(
        "TimeToLive is already enabled", code="ValidationException", operation="UpdateTimeToLive"
    )
    enabled, _ = run_script(
        table_ops.enable_ttl(Context(), cache),
        {"DescribeTimeToLive": [ttl("DISABLED")], "UpdateTimeToLive": [already]},
    )
    assert enabled is False
    other = ServiceValidationError("something else", code="ValidationException")
    with pytest.raises(ServiceValidationError):
        run_script(
            table_ops.enable_ttl(Context(), cache),
            {"DescribeTimeToLive": [ttl("DISABLED")], "UpdateTimeToLive": [other]},
        )


def test_a_table_without_ttl_sends_no_ttl_request_on_create() -> None:
    plain = Table("NoTtl", "PK")
    _, sent = run_script(
        table_ops.create_table(Context(), plain, wait=False), {"CreateTable": [{}]}
    )
    assert [operation for operation, _ in sent] == ["CreateTable"]


# -- on the engines -------------------------------------------------------------------------------


class Recorder:
    def __init__(self) -> None:
        self.operations: list[str] = []

    def before(self, request: Any) -> None:
        self.operations.append(request.operation)


@pytest.fixture
def session(endpoint_url: str, prefix: str) -> Iterator[Session]:
    with Session(endpoint_url=endpoint_url, region_name="us-east-1", table_prefix=prefix) as s:
        yield s
        with contextlib.suppress(ResourceNotFoundError):  # a test that never created it
            s.delete_table(cache, wait=False)


def live_ttl(dynamodb_client: Any, name: str) -> dict[str, Any]:
    description: dict[str, Any] = dynamodb_client.describe_time_to_live(TableName=name)[
        "TimeToLiveDescription"
    ]
    return description


def test_create_table_enables_ttl_once(session: Session, prefix: str, dynamodb_client: Any) -> None:
    recorder = Recorder()
    session.add_hook(recorder)
    assert session.create_table(cache) is True
    live = live_ttl(dynamodb_client, f"{prefix}TtlCache")
    assert live["TimeToLiveStatus"] in ("ENABLED", "ENABLING")
    assert live["AttributeName"] == "expires_at"
    assert recorder.operations.count("UpdateTimeToLive") == 1
    report = session.check_table(cache)
    assert report.ok or [d.kind for d in report.drifts] == ["ttl-enabling"], str(report)
    # Again, on the existing table: described, not enabled twice, no error.
    assert session.create_table(cache, exists_ok=True) is False
    assert recorder.operations.count("UpdateTimeToLive") == 1
    assert recorder.operations[-1] == "DescribeTimeToLive"


def test_check_reports_disabled_ttl_and_exists_ok_fixes_it(
    session: Session, prefix: str, dynamodb_client: Any
) -> None:
    name = f"{prefix}TtlCache"
    # Created by hand, without TTL, as an older deploy would have.
    create_and_wait(dynamodb_client, {**cache.create_table_request(), "TableName": name})
    report = session.check_table(cache)
    assert [d.kind for d in report.drifts] == ["ttl-disabled"]
    assert "never expire" in str(report)
    assert session.create_table(cache, exists_ok=True) is False
    assert live_ttl(dynamodb_client, name)["AttributeName"] == "expires_at"
    report = session.check_table(cache)
    assert report.ok or [d.kind for d in report.drifts] == ["ttl-enabling"], str(report)


def test_check_reports_ttl_on_another_attribute_and_undeclared_ttl(
    session: Session, prefix: str, dynamodb_client: Any
) -> None:
    name = f"{prefix}TtlCache"
    create_and_wait(dynamodb_client, {**cache.create_table_request(), "TableName": name})
    dynamodb_client.update_time_to_live(
        TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": "gone_at"}
    )
    report = session.check_table(cache)
    assert [d.kind for d in report.drifts] == ["ttl-attribute"]
    assert "'gone_at'" in str(report)
    recorder = Recorder()
    session.add_hook(recorder)
    session.create_table(cache, exists_ok=True)  # leaves TTL on another attribute alone
    assert "UpdateTimeToLive" not in recorder.operations
    assert live_ttl(dynamodb_client, name)["AttributeName"] == "gone_at"
    # The same live table seen by a declaration without TTL.
    undeclared = Table("TtlCache", "PK", "SK")
    report = session.check_table(undeclared)
    assert [d.kind for d in report.drifts] == ["ttl-undeclared"]


def test_items_round_trip_and_filter_on_expiry(session: Session, dynamodb_client: Any) -> None:
    session.create_table(cache)
    now = datetime.now(UTC).replace(microsecond=0)
    past = now - timedelta(hours=1)
    future = now + timedelta(hours=1, microseconds=123)
    stale = session.put(Entry(name="a", version=1, expires_at=past))
    fresh = session.put(Entry(name="a", version=2, expires_at=future))
    forever = session.put(Entry(name="a", version=3))
    raw = dynamodb_client.get_item(
        TableName=session.table_name(cache),
        Key={"PK": {"S": "E#a"}, "SK": {"S": "V#002"}},
    )["Item"]
    assert raw["expires_at"] == {"N": str(calendar.timegm(future.timetuple()))}
    got = session.get(Entry, name="a", version=2, consistent=True)
    assert got == fresh
    assert got is not None
    assert got.expires_at == future.replace(microsecond=0)
    # Expiry is asynchronous: a query filters out what has expired but is not deleted yet.
    unexpired = query(Entry).where(name="a").filter(cond("expires_at") > now).consistent()
    assert session.all(unexpired) == [fresh]
    alive = (
        query(Entry)
        .where(name="a")
        .filter(cond("expires_at").not_exists() | (cond("expires_at") > now))
    )
    assert session.all(alive.consistent()) == [fresh, forever]
    # Conditions compare numbers too.
    with pytest.raises(ConditionFailedError):
        session.delete(Entry, name="a", version=2, condition=cond("expires_at") < now)
    session.delete(Entry, name="a", version=1, condition=cond("expires_at") < now)
    assert session.get(Entry, name="a", version=1, consistent=True) is None
    # Batches and updates store numbers as well.
    session.batch_write([Entry(name="b", version=n, expires_at=future) for n in (1, 2)])
    pair = session.batch_get(Entry, [{"name": "b", "version": 1}, {"name": "b", "version": 2}])
    assert sorted(e.version for e in pair if e is not None) == [1, 2]
    assert all(e is not None and e.expires_at == fresh.expires_at for e in pair)
    session.update(Entry, name="b", version=1, set={"expires_at": past})
    raw = dynamodb_client.get_item(
        TableName=session.table_name(cache), Key={"PK": {"S": "E#b"}, "SK": {"S": "V#001"}}
    )["Item"]
    assert raw["expires_at"] == {"N": str(calendar.timegm(past.timetuple()))}
    assert stale.expires_at == past


def test_epoch_seconds_in_a_sort_key_queries_in_order(session: Session) -> None:
    session.create_table(cache)
    base = datetime(2030, 1, 1, tzinfo=UTC)
    moments = [base + timedelta(seconds=s) for s in (5, -3, 40, 0)]
    session.batch_write([Timed(topic="t", at=m, expires_at=m) for m in moments])
    found = session.all(query(Timed).where(topic="t", at=gt(base)).consistent())
    assert [t.at for t in found] == sorted(m for m in moments if m > base)


async def test_async_session_enables_and_checks_ttl(endpoint_url: str, prefix: str) -> None:
    async with AsyncSession(
        endpoint_url=endpoint_url, region_name="us-east-1", table_prefix=prefix
    ) as s:
        assert await s.create_table(cache) is True
        try:
            report = await s.check_table(cache)
            assert report.ok or [d.kind for d in report.drifts] == ["ttl-enabling"]
            assert await s.create_table(cache, exists_ok=True) is False
        finally:
            await s.delete_table(cache, wait=False)


MODELS = """
from lsiorm import Entity, EpochSeconds, Table

cache = Table("{name}", "PK", "SK", ttl_attribute="expires_at")
bare = Table("{name}", "PK", "SK")
"""


def test_cli_create_table_enables_ttl_and_check_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, endpoint_url: str, dynamodb_client: Any
) -> None:
    module = f"ttl_app_{uuid.uuid4().hex[:8]}"
    name = f"ttl_{uuid.uuid4().hex[:10]}"
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(MODELS).format(name=name))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    url = ("--endpoint-url", endpoint_url)

    def run(*argv: str) -> tuple[int, str]:
        out = io.StringIO()
        return main(list(argv), out=out), out.getvalue()

    try:
        code, out = run("create-table", f"{module}:bare", *url)
        assert code == EXIT_OK
        assert "time to live" not in out
        code, out = run("check", f"{module}:cache", *url)
        assert code == EXIT_FOUND
        assert "Time to live is disabled" in out
        code, out = run("create-table", f"{module}:cache", "--exists-ok", *url)
        assert code == EXIT_OK
        assert "enabled time to live on 'expires_at'" in out
        code, out = run("check", f"{module}:cache", *url)
        assert code == EXIT_OK or "being enabled" in out, out
        code, out = run("check", f"{module}:bare", *url)
        assert code == EXIT_FOUND
        assert "the declaration sets no ttl_attribute" in out
    finally:
        dynamodb_client.delete_table(TableName=name)
        sys.modules.pop(module, None)


def test_dynamodb_refuses_to_enable_ttl_twice_as_a_typed_error(
    session: Session, backend: str
) -> None:
    """Why enable_ttl describes first: DynamoDB refuses to enable TTL that is already on."""
    if backend == "moto":
        pytest.skip("moto accepts enabling TTL twice; DynamoDB and DynamoDB Local refuse it")
    session.create_table(cache)
    with pytest.raises(ServiceValidationError, match="already enabled") as caught:
        session.call("UpdateTimeToLive", cache.update_ttl_request(), tables=[cache])
    assert caught.value.code == "ValidationException"
    assert session.create_table(cache, exists_ok=True) is False  # and this is no error


fixture_cache = Table(f"TtlFixture_{uuid.uuid4().hex[:8]}", "PK", "SK", ttl_attribute="expires_at")
ttl_tables = table_fixture(fixture_cache, name="ttl_tables")


def test_the_fresh_tables_of_lsiorm_testing_have_ttl_enabled(ttl_tables: Session) -> None:
    live = ttl_tables.client.describe_time_to_live(TableName=fixture_cache.name)
    assert live["TimeToLiveDescription"]["AttributeName"] == "expires_at"
    assert ttl_tables.check_table(fixture_cache).ok


class TestThePytestPlugin:
    @pytest.fixture
    def lsiorm_tables(self) -> list[Table]:
        return [cache]

    def test_its_fresh_tables_have_ttl_enabled(self, lsiorm_session: Session) -> None:
        live = lsiorm_session.client.describe_time_to_live(
            TableName=lsiorm_session.table_name(cache)
        )
        assert live["TimeToLiveDescription"]["AttributeName"] == "expires_at"
        assert lsiorm_session.check_table(cache).ok

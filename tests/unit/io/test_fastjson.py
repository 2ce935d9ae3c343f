"""The fast response path returns exactly what botocore's own parser returns, or defers to it."""

from __future__ import annotations

import base64
import binascii
import copy
import json
import uuid
from collections.abc import Iterator
from datetime import date, datetime, timezone
from decimal import Decimal
from enum import Enum, IntEnum
from typing import Any

import boto3
import botocore.session
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from botocore.parsers import create_parser
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import ConfigDict, Field, model_validator

from lsiorm import Entity, Table
from lsiorm._io import fastjson
from lsiorm._io.fastjson import OPERATIONS, ResponseFastPath
from lsiorm._model.entity import decode_item
from lsiorm._model.wire import item_from_wire
from lsiorm.errors import LsiormError
from support.tables import created

SERVICE = botocore.session.get_session().get_service_model("dynamodb")
FAST = ResponseFastPath(SERVICE)
ALL_OPERATIONS = sorted(OPERATIONS)

# Strategies -----------------------------------------------------------------------------------

texts = st.text(max_size=8)
number_texts = st.one_of(
    st.integers(min_value=-(10**40), max_value=10**40).map(str),
    st.decimals(allow_nan=False, allow_infinity=False, places=3).map(str),
)
base64_texts = st.binary(max_size=12).map(lambda b: base64.b64encode(b).decode())


def _attribute_values() -> st.SearchStrategy[dict[str, Any]]:
    scalar = st.one_of(
        texts.map(lambda s: {"S": s}),
        number_texts.map(lambda n: {"N": n}),
        base64_texts.map(lambda b: {"B": b}),
        st.booleans().map(lambda b: {"BOOL": b}),
        st.just({"NULL": True}),
        st.lists(texts, min_size=1, max_size=3, unique=True).map(lambda v: {"SS": v}),
        st.lists(number_texts, min_size=1, max_size=3, unique=True).map(lambda v: {"NS": v}),
        st.lists(base64_texts, min_size=1, max_size=3, unique=True).map(lambda v: {"BS": v}),
    )
    return st.recursive(
        scalar,
        lambda children: st.one_of(
            st.lists(children, max_size=3).map(lambda v: {"L": v}),
            st.dictionaries(texts, children, max_size=3).map(lambda v: {"M": v}),
        ),
        max_leaves=12,
    )


attribute_values = _attribute_values()
doubles = st.floats(allow_nan=False, allow_infinity=False)
# Capacity units and size estimates are small; huge floats have a test of their own.
small_doubles = st.floats(min_value=-(2.0**62), max_value=2.0**62)


def conforming(shape: Any, depth: int = 0) -> st.SearchStrategy[Any]:
    """JSON values (as Python) that a DynamoDB response body may hold for this shape."""
    kind = shape.type_name
    if shape.name == "AttributeValue":
        return attribute_values
    if kind == "structure":
        if depth > 4:  # deeper structures stay empty, to keep examples small
            return st.just({})
        members = {name: conforming(member, depth + 1) for name, member in shape.members.items()}
        return st.fixed_dictionaries({}, optional=members)
    if kind == "list":
        return st.lists(conforming(shape.member, depth + 1), max_size=3)
    if kind == "map":
        return st.dictionaries(texts, conforming(shape.value, depth + 1), max_size=3)
    if kind == "string":
        return texts
    if kind in ("integer", "long"):
        return st.integers(min_value=-(2**63), max_value=2**64 - 1)
    if kind in ("double", "float"):
        return small_doubles
    if kind == "boolean":
        return st.booleans()
    if kind == "blob":
        return base64_texts
    raise AssertionError(f"unexpected shape kind {kind}")


OUTPUTS = {name: conforming(SERVICE.operation_model(name).output_shape) for name in OPERATIONS}

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=2**62, max_value=2**70),
    st.integers(max_value=-(2**62), min_value=-(2**70)),
    doubles,
    texts,
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(texts, children, max_size=3),
    max_leaves=10,
)


@st.composite
def mutated(draw: st.DrawFn, value: Any) -> Any:
    """``value`` with one node replaced by an arbitrary JSON value, or a key added or removed."""
    if isinstance(value, dict) and value and draw(st.booleans()):
        key = draw(st.sampled_from(sorted(value)))
        out = dict(value)
        action = draw(st.sampled_from(["replace", "descend", "drop", "add"]))
        if action == "replace":
            out[key] = draw(json_values)
        elif action == "descend":
            out[key] = draw(mutated(value[key]))
        elif action == "drop":
            del out[key]
        else:
            out[draw(texts | st.sampled_from(["S", "N", "B", "M", "L", "NULL", "__type"]))] = draw(
                json_values
            )
        return out
    if isinstance(value, list) and value and draw(st.booleans()):
        index = draw(st.integers(min_value=0, max_value=len(value) - 1))
        out_list = list(value)
        out_list[index] = draw(mutated(value[index]) | json_values)
        return out_list
    return draw(json_values) if draw(st.booleans()) else value


# Helpers --------------------------------------------------------------------------------------


def response_dict(body: bytes, *, status: int = 200, crc: bool = True) -> dict[str, Any]:
    headers = {"content-type": "application/x-amz-json-1.0", "x-amzn-requestid": "r-1"}
    if crc:
        headers["x-amz-crc32"] = str(binascii.crc32(body))
    return {"status_code": status, "headers": headers, "body": body, "context": {}}


def botocore_parse(operation: str, response: dict[str, Any]) -> Any:
    """What botocore's endpoint returns for this response with no handler registered."""
    shape = SERVICE.operation_model(operation).output_shape
    return create_parser("json").parse(copy.deepcopy(response), shape)


def fast_parse(operation: str, response: dict[str, Any], fast: ResponseFastPath = FAST) -> Any:
    """The same, with the fast path's handler run where botocore emits before-parse."""
    operation_model = SERVICE.operation_model(operation)
    response = copy.deepcopy(response)
    customized: dict[str, Any] = {}
    fast.before_parse(
        operation_model=operation_model,
        response_dict=response,
        customized_response_dict=customized,
        event_name=f"before-parse.dynamodb.{operation}",
    )
    parsed = create_parser("json").parse(response, operation_model.output_shape)
    parsed.update(customized)
    return parsed


def typed(value: Any) -> Any:
    """The value with every leaf paired with its type, so 1 and 1.0 and True differ."""
    if isinstance(value, dict):
        return {key: typed(v) for key, v in value.items()}
    if isinstance(value, list):
        return [typed(v) for v in value]
    return (type(value), value)


def outcome(parse: Any, operation: str, response: dict[str, Any]) -> Any:
    try:
        return ("ok", typed(parse(operation, response)))
    except Exception as exc:
        return ("raised", type(exc))


def assert_same(operation: str, response: dict[str, Any]) -> None:
    assert outcome(fast_parse, operation, response) == outcome(botocore_parse, operation, response)


def dump(value: Any, ascii_only: bool = True) -> bytes:
    return json.dumps(value, ensure_ascii=ascii_only).encode()


def fresh() -> ResponseFastPath:
    return ResponseFastPath(SERVICE)


# Bodies of the shapes DynamoDB sends --------------------------------------------------------


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), operation=st.sampled_from(ALL_OPERATIONS), ascii_only=st.booleans())
def test_conforming_bodies_take_the_fast_path_and_match_botocore(
    data: st.DataObject, operation: str, ascii_only: bool
) -> None:
    value = data.draw(OUTPUTS[operation])
    response = response_dict(dump(value, ascii_only))
    fast = fresh()
    mine = fast_parse(operation, response, fast)
    assert typed(mine) == typed(botocore_parse(operation, response))
    assert fast.stats.parsed == 1


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), operation=st.sampled_from(ALL_OPERATIONS))
def test_mutated_bodies_match_botocore_whichever_path_they_take(
    data: st.DataObject, operation: str
) -> None:
    value = data.draw(mutated(data.draw(OUTPUTS[operation])))
    assert_same(operation, response_dict(dump(value)))


@settings(max_examples=300)
@given(operation=st.sampled_from(ALL_OPERATIONS), body=st.binary(max_size=64))
@example(operation="Query", body=b"\xef\xbb\xbf{}")
@example(operation="Query", body=b'{"Count": 1e400}')
@example(operation="Query", body=b'{"Count": NaN}')
@example(operation="Query", body=b'{"Items": [{"a": {"S": "\\ud800"}}]}')
@example(operation="Query", body=b'{"Count": 123456789012345678901234567890}')
@example(operation="Query", body=b'{"Count": -9223372036854775809}')
@example(operation="Query", body=b'{"Count": 18446744073709551615}')
@example(operation="Query", body=b"null")
@example(operation="Query", body=b"[]")
@example(operation="Query", body=b"\xff")
def test_arbitrary_bytes_match_botocore(operation: str, body: bytes) -> None:
    assert_same(operation, response_dict(body))


@settings(max_examples=200)
@given(text=st.text(alphabet='{}[]":,0123456789.eE-+ SNBLMtruefalsnIcI\\u', max_size=40))
def test_json_like_text_matches_botocore(text: str) -> None:
    assert_same("Query", response_dict(text.encode()))


@settings(max_examples=200)
@given(value=json_values)
def test_numbers_and_nesting_in_scalar_members_match_botocore(value: Any) -> None:
    body = {"Count": value, "ConsumedCapacity": {"CapacityUnits": value, "TableName": "t"}}
    assert_same("Query", response_dict(dump(body)))


UNUSUAL_ITEMS = [
    {"a": {"S": "x", "N": "1"}},
    {"a": {"S": None}},
    {"a": {}},
    {"a": None},
    {"a": {"X": "1"}},
    {"a": {"S": 5}},
    {"a": {"N": 5}},
    {"a": {"BOOL": "true"}},
    {"a": {"NULL": None}},
    {"a": {"B": 5}},
    {"a": {"B": "not base64!"}},
    {"a": {"B": "YQ"}},
    {"a": {"BS": ["YQ==", 5]}},
    {"a": {"SS": "abc"}},
    {"a": {"SS": [1]}},
    {"a": {"L": {"S": "x"}}},
    {"a": {"L": [None]}},
    {"a": {"M": []}},
    {"a": {"M": {"b": {"S": "x", "__type": "y"}}}},
    {"a": ["S", "x"]},
    {"a": "x"},
]


@pytest.mark.parametrize("item", UNUSUAL_ITEMS, ids=repr)
def test_unusual_attribute_values_fall_back_to_botocore(item: Any) -> None:
    response = response_dict(dump({"Items": [item], "Count": 1}))
    fast = fresh()
    assert outcome(lambda o, r: fast_parse(o, r, fast), "Query", response) == outcome(
        botocore_parse, "Query", response
    )
    assert fast.stats.parsed == 0
    assert fast.stats.fallbacks == 1


def test_binary_values_become_bytes_like_botocore() -> None:
    item = {
        "b": {"B": base64.b64encode(b"\x00\xff").decode()},
        "bs": {"BS": [base64.b64encode(b"a").decode(), base64.b64encode(b"\x80").decode()]},
        "deep": {"L": [{"M": {"x": {"B": base64.b64encode(b"zz").decode()}}}]},
    }
    response = response_dict(dump({"Item": item}))
    parsed = fast_parse("GetItem", response)
    assert parsed["Item"]["b"] == {"B": b"\x00\xff"}
    assert parsed["Item"]["bs"] == {"BS": [b"a", b"\x80"]}
    assert parsed["Item"]["deep"]["L"][0]["M"]["x"] == {"B": b"zz"}
    assert typed(parsed) == typed(botocore_parse("GetItem", response))


def test_numbers_stay_strings_and_unknown_members_are_dropped() -> None:
    body = {"Items": [{"n": {"N": "1.50"}}], "Count": 1, "Unknown": [1, 2], "Count2": None}
    parsed = fast_parse("Query", response_dict(dump(body)))
    assert parsed["Items"] == [{"n": {"N": "1.50"}}]
    assert "Unknown" not in parsed
    assert parsed["ResponseMetadata"]["RequestId"] == "r-1"


# When the fast path stands aside ---------------------------------------------------------------


def test_crc32_mismatch_falls_back() -> None:
    body = dump({"Items": [{"a": {"S": "x"}}], "Count": 1})
    response = response_dict(body)
    response["headers"]["x-amz-crc32"] = str((binascii.crc32(body) + 1) % 2**32)
    fast = fresh()
    assert typed(fast_parse("Query", response, fast)) == typed(botocore_parse("Query", response))
    assert (fast.stats.parsed, fast.stats.fallbacks) == (0, 1)


@pytest.mark.parametrize("bad", ["", "abc", "-1", "١٢"])
def test_malformed_crc32_header_falls_back(bad: str) -> None:
    response = response_dict(dump({"Count": 1}))
    response["headers"]["x-amz-crc32"] = bad
    assert FAST.parse("Query", response) is None


def test_missing_crc32_header_is_not_required() -> None:
    response = response_dict(dump({"Count": 1}), crc=False)
    assert FAST.parse("Query", response) == {"Count": 1}


@pytest.mark.parametrize("status", [201, 400, 500, 503])
def test_other_statuses_are_left_to_botocore(status: int) -> None:
    body = dump({"__type": "com.amazonaws.dynamodb.v20120810#ResourceNotFoundException"})
    response = response_dict(body, status=status)
    assert FAST.parse("Query", response) is None
    assert_same("Query", response)


def test_non_json_content_type_falls_back() -> None:
    response = response_dict(dump({"Count": 1}))
    response["headers"]["content-type"] = "text/html"
    assert FAST.parse("Query", response) is None


def test_other_operations_are_untouched() -> None:
    assert {"DescribeTable", "ListTables", "CreateTable"}.isdisjoint(FAST.operations)
    response = response_dict(dump({"TableNames": ["a"]}))
    customized: dict[str, Any] = {}
    FAST.before_parse(
        operation_model=SERVICE.operation_model("ListTables"),
        response_dict=response,
        customized_response_dict=customized,
    )
    assert customized == {}
    assert response["body"] == dump({"TableNames": ["a"]})


def test_every_listed_operation_compiles() -> None:
    assert FAST.operations == OPERATIONS


# install / uninstall ---------------------------------------------------------------------------


def local_client() -> Any:
    return boto3.client("dynamodb", region_name="us-east-1")


def test_install_is_idempotent_and_uninstall_restores() -> None:
    client = local_client()
    assert not fastjson.installed(client)
    fastjson.install(client)
    first = fastjson.fast_path_of(client)
    fastjson.install(client)
    assert fastjson.fast_path_of(client) is first is not None
    fastjson.uninstall(client)
    assert not fastjson.installed(client)
    fastjson.uninstall(client)
    assert fastjson.fast_path_of(client) is None


@pytest.mark.parametrize("value", ["0", "off", "False", " no "])
def test_environment_opt_out(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(fastjson.DISABLE_ENV, value)
    client = local_client()
    fastjson.install(client)
    assert not fastjson.installed(client)


def test_other_services_are_refused() -> None:
    with pytest.raises(ValueError, match="DynamoDB client"):
        fastjson.install(boto3.client("sqs", region_name="us-east-1"))


# End to end, on both engines, sync and async ---------------------------------------------------

BINARY_ITEM: dict[str, Any] = {
    "pk": {"S": "P"},
    "sk": {"S": "bin"},
    "b": {"B": b"\x00\x01\xfe\xff"},
    "bs": {"BS": [b"a", b"\x80\x81"]},
    "n": {"N": "1.50"},
    "ns": {"NS": ["1", "2.5"]},
    "ss": {"SS": ["x", "y"]},
    "m": {"M": {"inner": {"L": [{"B": b"zz"}, {"NULL": True}, {"BOOL": False}]}}},
    "text": {"S": "é ü 漢字 \u2028"},
}


def client_for(endpoint_url: str, *, fast: bool) -> Any:
    client = boto3.client(
        "dynamodb",
        endpoint_url=endpoint_url,
        region_name="us-east-1",
        config=Config(retries={"total_max_attempts": 1, "mode": "standard"}),
    )
    if fast:
        fastjson.install(client)
    return client


def without_metadata(response: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in response.items() if key != "ResponseMetadata"}


@pytest.fixture
def filled_table(dynamodb_client: Any, table_name: str) -> Iterator[str]:
    with created(dynamodb_client, Table(table_name, "pk", "sk")):
        dynamodb_client.put_item(TableName=table_name, Item=BINARY_ITEM)
        for i in range(30):
            dynamodb_client.put_item(
                TableName=table_name,
                Item={
                    "pk": {"S": "P"},
                    "sk": {"S": f"item{i:03d}"},
                    "n": {"N": str(i * 7)},
                    "blob": {"B": bytes([i]) * 3},
                },
            )
        yield table_name


def read_calls(table: str) -> list[tuple[str, dict[str, Any]]]:
    key = {"pk": {"S": "P"}, "sk": {"S": "bin"}}
    return [
        ("get_item", {"TableName": table, "Key": key, "ReturnConsumedCapacity": "TOTAL"}),
        ("get_item", {"TableName": table, "Key": {"pk": {"S": "P"}, "sk": {"S": "none"}}}),
        (
            "query",
            {
                "TableName": table,
                "KeyConditionExpression": "pk = :p",
                "ExpressionAttributeValues": {":p": {"S": "P"}},
                "ReturnConsumedCapacity": "INDEXES",
            },
        ),
        (
            "query",
            {
                "TableName": table,
                "KeyConditionExpression": "pk = :p",
                "ExpressionAttributeValues": {":p": {"S": "P"}},
                "Limit": 7,
            },
        ),
        ("scan", {"TableName": table, "ReturnConsumedCapacity": "TOTAL"}),
        (
            "batch_get_item",
            {
                "RequestItems": {
                    table: {"Keys": [key, {"pk": {"S": "P"}, "sk": {"S": "item003"}}]}
                },
                "ReturnConsumedCapacity": "TOTAL",
            },
        ),
    ]


def write_calls(table: str) -> list[tuple[str, dict[str, Any]]]:
    key = {"pk": {"S": "P"}, "sk": {"S": "bin"}}
    return [
        (
            "put_item",
            {
                "TableName": table,
                "Item": BINARY_ITEM,
                "ReturnValues": "ALL_OLD",
                "ReturnConsumedCapacity": "TOTAL",
                "ReturnItemCollectionMetrics": "SIZE",
            },
        ),
        (
            "update_item",
            {
                "TableName": table,
                "Key": key,
                "UpdateExpression": "SET #n = :n",
                "ExpressionAttributeNames": {"#n": "n"},
                "ExpressionAttributeValues": {":n": {"N": "1.50"}},
                "ReturnValues": "ALL_NEW",
            },
        ),
        (
            "batch_write_item",
            {
                "RequestItems": {table: [{"PutRequest": {"Item": BINARY_ITEM}}]},
                "ReturnConsumedCapacity": "TOTAL",
            },
        ),
        ("delete_item", {"TableName": table, "Key": key, "ReturnValues": "ALL_OLD"}),
    ]


def restore(plain: Any, table: str) -> None:
    """Put the binary item back, so each write call sees the same table state."""
    plain.put_item(TableName=table, Item=BINARY_ITEM)


def failing_call(table: str) -> tuple[str, dict[str, Any]]:
    return (
        "put_item",
        {
            "TableName": table,
            "Item": BINARY_ITEM,
            "ConditionExpression": "attribute_not_exists(pk)",
        },
    )


def error_of(method: Any, params: dict[str, Any]) -> dict[str, Any]:
    with pytest.raises(ClientError) as info:
        method(**params)
    return without_metadata(info.value.response)


def test_sync_client_matches_botocore_on_the_engine(endpoint_url: str, filled_table: str) -> None:
    plain, fast = client_for(endpoint_url, fast=False), client_for(endpoint_url, fast=True)
    stats = fastjson.fast_path_of(fast)
    assert stats is not None
    for method, params in read_calls(filled_table) + write_calls(filled_table):
        got = without_metadata(getattr(fast, method)(**params))
        restore(plain, filled_table)
        want = without_metadata(getattr(plain, method)(**params))
        restore(plain, filled_table)
        assert typed(got) == typed(want), method
    assert stats.stats.parsed == len(read_calls(filled_table)) + len(write_calls(filled_table))
    got_item = fast.get_item(TableName=filled_table, Key={"pk": {"S": "P"}, "sk": {"S": "bin"}})
    assert got_item["Item"]["b"] == {"B": b"\x00\x01\xfe\xff"}
    assert sorted(got_item["Item"]["bs"]["BS"]) == [b"a", b"\x80\x81"]
    assert got_item["Item"]["m"]["M"]["inner"]["L"][0] == {"B": b"zz"}
    method, params = failing_call(filled_table)
    assert error_of(getattr(fast, method), params) == error_of(getattr(plain, method), params)


def test_other_before_parse_handlers_still_see_the_body(
    endpoint_url: str, filled_table: str
) -> None:
    fast = client_for(endpoint_url, fast=True)
    seen: list[bytes] = []

    def spy(response_dict: dict[str, Any], **kwargs: Any) -> None:
        seen.append(response_dict["body"])

    fast.meta.events.register("before-parse.dynamodb.Query", spy)
    fast.meta.events.register("before-parse", spy)
    response = fast.query(
        TableName=filled_table,
        KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": "P"}},
    )
    assert len(seen) == 2
    assert all(json.loads(body)["Count"] == response["Count"] == 31 for body in seen)


def test_a_corrupted_body_checksum_falls_back_on_the_engine(
    endpoint_url: str, filled_table: str
) -> None:
    fast = client_for(endpoint_url, fast=True)
    stats = fastjson.fast_path_of(fast)
    assert stats is not None

    def corrupt(response_dict: dict[str, Any], **kwargs: Any) -> None:
        assert response_dict["headers"].get("X-Amz-CRC32") is not None  # both engines send it
        response_dict["headers"]["x-amz-crc32"] = "1"

    key = {"pk": {"S": "P"}, "sk": {"S": "bin"}}
    fast.get_item(TableName=filled_table, Key=key)
    assert (stats.stats.parsed, stats.stats.fallbacks) == (1, 0)
    fast.meta.events.register("before-parse.dynamodb.GetItem", corrupt)
    got = fast.get_item(TableName=filled_table, Key=key)
    assert (stats.stats.parsed, stats.stats.fallbacks) == (1, 1)
    assert got["Item"]["b"] == {"B": b"\x00\x01\xfe\xff"}


async def test_async_client_matches_botocore_on_the_engine(
    endpoint_url: str, filled_table: str
) -> None:
    aioboto3 = pytest.importorskip("aioboto3", reason="needs the async extra")
    plain = client_for(endpoint_url, fast=False)
    async with aioboto3.Session().client(
        "dynamodb",
        endpoint_url=endpoint_url,
        region_name="us-east-1",
        config=Config(retries={"total_max_attempts": 1, "mode": "standard"}),
    ) as client:
        fastjson.install(client)
        fast = fastjson.fast_path_of(client)
        assert fast is not None
        calls = read_calls(filled_table) + write_calls(filled_table)
        for method, params in calls:
            got = without_metadata(await getattr(client, method)(**params))
            restore(plain, filled_table)
            want = without_metadata(getattr(plain, method)(**params))
            restore(plain, filled_table)
            assert typed(got) == typed(want), method
        assert fast.stats.parsed == len(calls)
        method, params = failing_call(filled_table)
        with pytest.raises(ClientError) as info:
            await getattr(client, method)(**params)
        assert without_metadata(info.value.response) == error_of(getattr(plain, method), params)


# The typed decode: decode_item decodes only what the model reads, with the same result --------


class Colour(str, Enum):
    RED = "red"
    BLUE = "blue"


class Level(IntEnum):
    LOW = 1
    HIGH = 2


DECODE_TABLE = Table("fastjson_decode", partition_key="pk")


class Everything(Entity, table=DECODE_TABLE, keys={"pk": "E#{name}"}):
    """One field of each kind the decoder treats specially, and some it does not."""

    name: str
    count: int = 0
    ratio: float = 0.0
    amount: Decimal | None = None
    flag: bool = False
    data: bytes | None = None
    tags: list[str] = Field(default_factory=list)
    when: datetime | None = None
    day: date | None = None
    ident: uuid.UUID | None = None
    colour: Colour | None = None
    level: Level | None = None
    either: int | str | None = None
    mapping: dict[str, Any] = Field(default_factory=dict)
    nested: list[Any] = Field(default_factory=list)
    renamed: str | None = Field(default=None, alias="Renamed")


class SeesEverything(Entity, table=DECODE_TABLE, keys={"pk": "S#{name}"}):
    """A before-validator may read any attribute, so nothing may be left out."""

    name: str
    partition: str = ""

    @model_validator(mode="before")
    @classmethod
    def copy_partition(cls, data: Any) -> Any:
        return {**data, "partition": data.get("pk", "")}


class KeepsExtras(Entity, table=DECODE_TABLE, keys={"pk": "K#{name}"}):
    model_config = ConfigDict(extra="allow")

    name: str


FIELD_KEYS = sorted(
    {key for name, info in Everything.model_fields.items() for key in (name, info.alias) if key}
)

plain_avs = st.recursive(
    st.one_of(
        st.text(max_size=6).map(lambda s: {"S": s}),
        st.sampled_from(["0", "7", "-3", "1.50", "1e3", "2E-2", "abc", "", " 5", "1_0"]).map(
            lambda n: {"N": n}
        ),
        st.binary(max_size=4).map(lambda b: {"B": b}),
        st.booleans().map(lambda b: {"BOOL": b}),
        st.just({"NULL": True}),
        st.sampled_from(["red", "blue", "2024-01-02", "2024-01-02T03:04:05+00:00"]).map(
            lambda s: {"S": s}
        ),
        st.just({"S": str(uuid.UUID(int=7))}),
        st.lists(st.text(max_size=3), min_size=1, max_size=3).map(lambda v: {"SS": v}),
        st.lists(st.sampled_from(["1", "2.5"]), min_size=1, max_size=2).map(lambda v: {"NS": v}),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=3).map(lambda v: {"L": v}),
        st.dictionaries(st.text(max_size=3), children, max_size=2).map(lambda v: {"M": v}),
    ),
    max_leaves=6,
)


MALFORMED_AVS: list[Any] = [
    {},
    {"S": "x", "N": "1"},
    {"S": None},
    {"N": 5},
    {"N": b"5"},
    {"N": None},
    {"N": "1", "S": "1"},
    {"L": [{"S": "a"}, "b"]},
    {"L": [{"S": "a", "N": "1"}]},
    {"L": [{"S": None}]},
    {"L": [{"N": "1"}]},
    {"L": "ab"},
    {"L": ({"S": "a"},)},
    {"X": 1},
    {"BOOL": None},
    {"BOOL": True, "S": "x"},
    {"B": b"x", "S": "x"},
    "S",
    None,
]


def decoded_outcome(decode: Any, wire: dict[str, Any]) -> Any:
    try:
        entity = decode(wire)
    except LsiormError as exc:
        return ("lsiorm", type(exc), getattr(exc, "rule", None))
    except ValueError as exc:  # pydantic's ValidationError
        errors = getattr(exc, "errors", None)
        if errors is None:
            return ("invalid", type(exc), str(exc))
        # A missing field's error shows the whole input, which now holds only what the model reads.
        shown = [
            {k: v for k, v in e.items() if not (k == "input" and e["type"] == "missing")}
            for e in errors(include_url=False)
        ]
        return ("invalid", type(exc), shown)
    if entity is None:
        return None
    return ("ok", type(entity), typed(entity.model_dump()), entity.model_fields_set)


def reference_decode(wire: dict[str, Any]) -> Any:
    """decode_item as it was: the whole item through item_from_wire, then model_validate."""
    return Everything.model_validate(item_from_wire(wire))


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(
    changes=st.dictionaries(
        st.sampled_from(FIELD_KEYS),
        plain_avs | st.sampled_from(MALFORMED_AVS),
        max_size=len(FIELD_KEYS),
    ),
    dropped=st.sets(st.sampled_from(FIELD_KEYS)),
)
def test_decode_item_equals_model_validate_of_the_whole_item(
    changes: dict[str, Any], dropped: set[str]
) -> None:
    wire = Everything(
        name="n",
        count=3,
        amount=Decimal("1.25"),
        tags=["a", "b"],
        when=datetime(2024, 1, 2, tzinfo=timezone.utc),
        colour=Colour.RED,
        level=Level.HIGH,
        renamed="r",
    ).to_wire()
    for key in dropped:
        wire.pop(key, None)
    wire.update(changes)
    assert decoded_outcome(lambda w: decode_item(DECODE_TABLE, w), wire) == decoded_outcome(
        reference_decode, wire
    )


@pytest.mark.parametrize("key", FIELD_KEYS)
def test_each_field_given_each_malformed_value_decodes_as_before(key: str) -> None:
    for av in MALFORMED_AVS:
        wire = Everything(name="n").to_wire()
        wire[key] = av
        assert decoded_outcome(lambda w: decode_item(DECODE_TABLE, w), wire) == decoded_outcome(
            reference_decode, wire
        ), av


def test_a_one_shot_iterable_is_read_once() -> None:
    def wire() -> dict[str, Any]:
        item = Everything(name="n").to_wire()
        item["tags"] = {"L": iter([{"S": "a"}, {"N": "1"}])}
        return item

    assert decoded_outcome(lambda w: decode_item(DECODE_TABLE, w), wire()) == decoded_outcome(
        reference_decode, wire()
    )


def test_attributes_the_model_ignores_are_not_decoded() -> None:
    wire = Everything(name="n").to_wire()
    wire["unrelated"] = {"N": "not a number"}
    assert decode_item(DECODE_TABLE, wire) == Everything(name="n")
    with pytest.raises(LsiormError):
        item_from_wire(wire)


def test_a_before_validator_still_sees_every_attribute() -> None:
    wire = SeesEverything(name="x").to_wire()
    decoded = decode_item(DECODE_TABLE, wire)
    assert isinstance(decoded, SeesEverything)
    assert decoded.partition == "S#x"


def test_extra_attributes_are_kept_when_the_model_allows_them() -> None:
    wire = KeepsExtras(name="x").to_wire()
    wire["more"] = {"N": "2"}
    decoded = decode_item(DECODE_TABLE, wire)
    assert decoded is not None
    assert decoded.model_extra == {"pk": "K#x", "_type": "KeepsExtras", "more": 2}

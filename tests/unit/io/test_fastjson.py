"""The fast response path returns exactly what botocore's own parser returns, or defers to it."""

from __future__ import annotations

import base64
import binascii
import copy
import json
from typing import Any

import boto3
import botocore.session
import pytest
from botocore.parsers import create_parser
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from lsiorm._io import fastjson
from lsiorm._io.fastjson import OPERATIONS, ResponseFastPath
from support.outcomes import typed

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
    # One member, as the common S and N values have, of anything but an AttributeValue.
    {"a": ["S"]},
    {"a": "S"},
    {"a": 1},
    {"a": {"S": ["x"]}},
    {"a": {"N": "1", "S": 2}},
    {"a": {"L": [{"S": "x"}, ["S"]]}},
    {"a": {"M": {"b": "N"}}},
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

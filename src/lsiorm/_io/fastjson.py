"""The fast read path: DynamoDB JSON response bodies parsed once by orjson, not by botocore.

botocore turns a response body into Python with a parser that walks the service model shape
by shape, value by value; on a 1000-item Query page that costs several times the HTTP round
trip to DynamoDB Local. `install` registers a ``before-parse`` handler on a client's
public event system (``client.meta.events``; sync botocore and aiobotocore alike). For the
data-plane operations in `OPERATIONS` the handler parses the body with `orjson.loads`,
checks it against the output shape, base64-decodes B and BS values as botocore does, and hands
the result to botocore through the ``customized_response_dict`` the event carries. It then
empties the body botocore is about to parse, so botocore's own parser only adds
``ResponseMetadata``. Signing, retries, HTTP and error handling stay in botocore.

Anything unusual leaves the response to botocore untouched: a status other than 200, a body
that is not JSON, an ``x-amz-crc32`` header that does not match the body, a value whose type
the model does not allow, an AttributeValue that is not exactly one known type, an integer too
large for orjson to keep exact, or an operation whose output shape holds something this module
does not convert (timestamps, documents, unions, event streams). The result is therefore always
equal (``==``) to what botocore's parser returns for the same body.

Error responses stay botocore's, with one addition: a throttle's reasons. DynamoDB sends them in
the body (``ThrottlingReasons``, or ``throttlingReasons`` in a ``ThrottlingException``), and a
botocore older than its model's ``ThrottlingReason`` drops them; `error_fields` reads them from
the body, and the handler hands them over with the parsed error, for every operation, so a
`ThrottledError` carries them whatever botocore's release. The lean lane does the same
(`lsiorm._io.lean`).
"""

from __future__ import annotations

import base64
import binascii
import os
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "DISABLE_ENV",
    "OPERATIONS",
    "FastPathStats",
    "ResponseFastPath",
    "disabled",
    "error_fields",
    "fast_path_of",
    "install",
    "installed",
    "uninstall",
]

#: The operations whose responses take the fast path; all others go to botocore as usual.
OPERATIONS: Final = frozenset(
    {
        "Query",
        "Scan",
        "GetItem",
        "BatchGetItem",
        "PutItem",
        "UpdateItem",
        "DeleteItem",
        "BatchWriteItem",
    }
)

#: Set this environment variable to ``0``, ``false``, ``no`` or ``off`` to make
#: `install` do nothing (checked when a client is installed, not per response).
DISABLE_ENV: Final = "LSIORM_FASTJSON"

_OFF_VALUES: Final = frozenset({"0", "false", "no", "off"})
#: The members of an error body handed over whatever botocore's model knows: a throttle's
#: reasons (each a ``{"reason", "resource"}`` of strings).
_ERROR_LISTS: Final = ("ThrottlingReasons", "throttlingReasons")
# The most general event name, registered last: every other before-parse handler, more specific
# or registered earlier, sees the original body before this one empties it.
_EVENT: Final = "before-parse"
_HANDLER_ID: Final = "lsiorm.fastjson"
# orjson turns an integer literal outside the 64-bit range into a float, where json keeps an
# exact int; every such float has at least this magnitude, so one comparison finds them all.
_INEXACT_FLOAT: Final = 2.0**63

_Convert = Callable[[Any], Any]

_ATTRIBUTE_VALUE_MEMBERS: Final = {
    "S": "string",
    "N": "string",
    "B": "blob",
    "SS": "list",
    "NS": "list",
    "BS": "list",
    "M": "map",
    "L": "list",
    "NULL": "boolean",
    "BOOL": "boolean",
}
_SCALAR_TYPES: Final = frozenset({"string", "integer", "long", "double", "float", "boolean"})
# The wire type each scalar AttributeValue tag must carry; other tags take the slower branch.
_SCALAR_TAGS: Final[dict[str, type]] = {"S": str, "N": str, "BOOL": bool, "NULL": bool}


class _Unusual(ValueError):
    """The body holds something botocore should parse itself."""


class _Unsupported(Exception):
    """The output shape holds something this module does not convert."""


# -- AttributeValues: the hot path, checked and converted in place ------------------------------


def _attribute_map(value: Any) -> Any:
    if type(value) is not dict:
        raise _Unusual
    _attribute_values(value.values())
    return value


def _attribute_list(value: Any) -> Any:
    if type(value) is not list:
        raise _Unusual
    _attribute_values(value)
    return value


def _attribute_values(values: Iterable[Any]) -> None:
    expected = _SCALAR_TAGS.get
    for av in values:
        # Most values are one S or N string: two lookups tell, without unpacking the items.
        if len(av) == 1 and (type(av.get("S")) is str or type(av.get("N")) is str):
            continue
        # Raises ValueError unless av has exactly one member, AttributeError or TypeError
        # unless a dict.
        ((tag, raw),) = av.items()
        if expected(tag) is not type(raw):
            _other_attribute_value(av, tag, raw)


def _attribute_value(value: Any) -> Any:
    if type(value) is not dict:
        raise _Unusual
    ((tag, raw),) = value.items()
    if _SCALAR_TAGS.get(tag) is not type(raw):
        _other_attribute_value(value, tag, raw)
    return value


def _blob(value: Any) -> bytes:
    if type(value) is not str:
        raise _Unusual
    # The very function botocore's default blob parser calls, so the bytes are the same.
    return base64.b64decode(value)


def _strings(value: Any) -> None:
    if type(value) is not list:
        raise _Unusual
    for element in value:
        if type(element) is not str:
            raise _Unusual


def _other_attribute_value(av: dict[str, Any], tag: str, raw: Any) -> None:
    if tag == "M":
        _attribute_map(raw)
    elif tag == "L":
        _attribute_list(raw)
    elif tag == "B":
        av["B"] = _blob(raw)
    elif tag == "SS" or tag == "NS":
        _strings(raw)
    elif tag == "BS":
        _strings(raw)
        av["BS"] = [base64.b64decode(element) for element in raw]
    else:
        # A scalar tag carrying the wrong type (or None), or a tag the model does not know.
        raise _Unusual


# -- Everything else: small structures, converted by their shape --------------------------------


# Every converter below refuses None, so a null inside a list or map (where botocore's handling
# depends on the shape) also falls back.
def _scalar(value: Any) -> Any:
    kind = type(value)
    if kind is str or kind is int or kind is bool:
        return value
    if kind is float and -_INEXACT_FLOAT < value < _INEXACT_FLOAT:
        return value
    raise _Unusual


def _structure(members: list[tuple[str, str, _Convert]]) -> _Convert:
    def convert(value: Any) -> Any:
        if type(value) is not dict:
            raise _Unusual
        out: dict[str, Any] = {}
        for name, wire_name, member in members:
            raw = value.get(wire_name)
            # botocore leaves out members that are absent or null.
            if raw is not None:
                out[name] = member(raw)
        return out

    return convert


def _list(member: _Convert) -> _Convert:
    def convert(value: Any) -> Any:
        if type(value) is not list:
            raise _Unusual
        return [member(element) for element in value]

    return convert


def _map(member: _Convert) -> _Convert:
    def convert(value: Any) -> Any:
        if type(value) is not dict:
            raise _Unusual
        return {key: member(element) for key, element in value.items()}

    return convert


def _is_attribute_value(shape: Any) -> bool:
    if shape.name != "AttributeValue" or shape.type_name != "structure":
        return False
    members = shape.members
    if {name: m.type_name for name, m in members.items()} != _ATTRIBUTE_VALUE_MEMBERS:
        return False
    if any(m.serialization.get("name", name) != name for name, m in members.items()):
        return False
    string_lists = (members["SS"].member, members["NS"].member)
    return (
        all(m.type_name == "string" for m in string_lists)
        and members["BS"].member.type_name == "blob"
        and members["M"].key.type_name == "string"
        and members["M"].value.name == "AttributeValue"
        and members["L"].member.name == "AttributeValue"
    )


def _compile(shape: Any, memo: dict[str, _Convert]) -> _Convert:
    found = memo.get(shape.name)
    if found is not None:
        return found
    kind = shape.type_name
    if kind == "structure":
        if _is_attribute_value(shape):
            return _attribute_value
        if (
            shape.is_document_type
            or getattr(shape, "is_tagged_union", False)
            or shape.serialization.get("eventstream")
            or shape.metadata.get("union")
        ):
            raise _Unsupported(shape.name)
        members: list[tuple[str, str, _Convert]] = []
        convert = _structure(members)
        memo[shape.name] = convert  # before the members, so a recursive shape finds itself
        for name, member in shape.members.items():
            if member.serialization.get("location"):
                raise _Unsupported(f"{shape.name}.{name} is not in the body")
            wire_name = member.serialization.get("name", name)
            members.append((name, wire_name, _compile(member, memo)))
        return convert
    if kind == "list":
        if _is_attribute_value(shape.member):
            return _attribute_list
        return _list(_compile(shape.member, memo))
    if kind == "map":
        if shape.key.type_name != "string":
            raise _Unsupported(shape.name)
        if _is_attribute_value(shape.value):
            return _attribute_map
        return _map(_compile(shape.value, memo))
    if kind in _SCALAR_TYPES:
        return _scalar
    if kind == "blob":
        return _blob
    raise _Unsupported(f"{shape.name} is a {kind}")


@dataclass
class FastPathStats:
    """How many responses the fast path parsed, and how many it left to botocore."""

    parsed: int = 0
    fallbacks: int = 0


class ResponseFastPath:
    """The compiled converters of one DynamoDB service model, and the event handler using them.

    ``operations`` lists the operations that take the fast path: those of `OPERATIONS`
    whose output shape this module can convert.
    """

    def __init__(self, service_model: Any) -> None:
        import orjson  # when a client gets the fast path, not on ``import lsiorm``

        self._loads: Callable[[bytes], Any] = orjson.loads
        self._converters: dict[str, _Convert] = {}
        memo: dict[str, _Convert] = {}
        for name in sorted(OPERATIONS & set(service_model.operation_names)):
            shape = service_model.operation_model(name).output_shape
            if shape is None:
                continue
            try:
                self._converters[name] = _compile(shape, memo)
            except _Unsupported:
                continue
        self.operations = frozenset(self._converters)
        self.stats = FastPathStats()

    def parse(self, operation: str, response: Mapping[str, Any]) -> dict[str, Any] | None:
        """Return the parsed body of a response dict as botocore would, or None to fall back.

        ``response`` is botocore's response dict (``status_code``, ``headers``, ``body``).
        The result holds the output members only; botocore adds ``ResponseMetadata``.
        """
        convert = self._converters.get(operation)
        if convert is None or response.get("status_code") != 200:
            return None
        body = response.get("body")
        if type(body) is not bytes or not body:
            return None
        headers = response.get("headers") or {}
        content_type = headers.get("content-type")
        if content_type is not None and "json" not in str(content_type).lower():
            return None
        expected = headers.get("x-amz-crc32")
        if expected is not None:
            text = str(expected)
            if not (text.isascii() and text.isdigit()) or binascii.crc32(body) != int(text):
                return None
        try:
            parsed: dict[str, Any] = convert(self._loads(body))
        except (ValueError, TypeError, AttributeError):
            # orjson.JSONDecodeError, binascii.Error and _Unusual are all ValueErrors.
            return None
        return parsed

    def before_parse(
        self,
        operation_model: Any = None,
        response_dict: Any = None,
        customized_response_dict: Any = None,
        **kwargs: Any,
    ) -> None:
        """Handle botocore's ``before-parse`` event: parse the body, or leave it to botocore."""
        if operation_model is None or response_dict is None or customized_response_dict is None:
            return
        name = operation_model.name
        if name not in self.operations:
            customized_response_dict.update(error_fields(response_dict))
            return
        parsed = self.parse(name, response_dict)
        if parsed is None:
            self.stats.fallbacks += 1
            customized_response_dict.update(error_fields(response_dict))
            return
        customized_response_dict.update(parsed)
        # botocore parses the body after this event; an empty body parses to {} at no cost and
        # still gets ResponseMetadata, which botocore builds from the headers.
        response_dict["body"] = b""
        self.stats.parsed += 1


def error_fields(response: Mapping[str, Any]) -> dict[str, Any]:
    """The throttling reasons of an error response dict (its body as sent), as botocore's
    model names them; empty for any other response or a body that is not JSON."""
    body = response.get("body")
    status = response.get("status_code")
    if not isinstance(status, int) or status < 300 or type(body) is not bytes or not body:
        return {}
    if b"hrottlingReasons" not in body:  # most errors: no parse at all
        return {}
    import orjson

    try:
        parsed = orjson.loads(body)
    except ValueError:
        return {}
    if not isinstance(parsed, dict):
        return {}
    found: dict[str, Any] = {}
    for name in _ERROR_LISTS:
        listed = parsed.get(name)
        if isinstance(listed, list):
            found[name] = [
                {k: str(v) for k, v in entry.items() if k in ("reason", "resource")}
                for entry in listed
                if isinstance(entry, dict)
            ]
    return found


_INSTALLED: weakref.WeakKeyDictionary[Any, ResponseFastPath] = weakref.WeakKeyDictionary()


def disabled() -> bool:
    """True when `DISABLE_ENV` turns the fast path off."""
    return os.environ.get(DISABLE_ENV, "").strip().lower() in _OFF_VALUES


def install(client: Any) -> None:
    """Give a boto3 or aiobotocore DynamoDB client the fast response path (idempotent).

    Does nothing when `DISABLE_ENV` turns the fast path off, or when the client's
    service does not speak DynamoDB's JSON protocol. Raises ``ValueError`` for a client of
    another service.
    """
    service = client.meta.service_model
    if service.service_name != "dynamodb":
        raise ValueError(f"fastjson.install needs a DynamoDB client, not {service.service_name}.")
    if disabled() or getattr(service, "resolved_protocol", service.protocol) != "json":
        return
    events = client.meta.events
    if events in _INSTALLED:
        return
    fast = ResponseFastPath(service)
    events.register_last(_EVENT, fast.before_parse, unique_id=_HANDLER_ID)
    _INSTALLED[events] = fast


def uninstall(client: Any) -> None:
    """Return a client to botocore's own parser; a client without the fast path is unchanged."""
    events = client.meta.events
    if _INSTALLED.pop(events, None) is not None:
        events.unregister(_EVENT, unique_id=_HANDLER_ID)


def installed(client: Any) -> bool:
    """Whether the client has the fast response path."""
    return client.meta.events in _INSTALLED


def fast_path_of(client: Any) -> ResponseFastPath | None:
    """Return the fast path installed on a client (for its ``stats``), or None."""
    return _INSTALLED.get(client.meta.events)

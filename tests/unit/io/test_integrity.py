"""What an answer must pass before it is parsed: its x-amz-crc32 and its content encoding."""

from __future__ import annotations

import gzip
import zlib

import pytest
from botocore.exceptions import HTTPClientError
from hypothesis import given
from hypothesis import strategies as st

from lsiorm._io.integrity import verified_body
from lsiorm.errors import ConfigurationError


def crc(body: bytes) -> str:
    return str(zlib.crc32(body))


@given(body=st.binary(max_size=200))
def test_a_body_passes_with_its_own_checksum_and_fails_with_another(body: bytes) -> None:
    assert verified_body({"x-amz-crc32": crc(body)}, body) == body
    assert verified_body({}, body) == body  # no checksum sent: nothing to compare
    with pytest.raises(HTTPClientError, match="x-amz-crc32"):
        verified_body({"x-amz-crc32": str(zlib.crc32(body) ^ 1)}, body)


@given(body=st.binary(max_size=200))
def test_compressed_bodies_are_decoded_with_the_checksum_of_either_form(body: bytes) -> None:
    packed = gzip.compress(body)
    for checksum in (crc(packed), crc(body)):
        headers = {"content-encoding": "gzip", "x-amz-crc32": checksum}
        assert verified_body(headers, packed) == body
    deflated = zlib.compress(body)
    deflate = {"content-encoding": "deflate", "x-amz-crc32": crc(deflated)}
    assert verified_body(deflate, deflated) == body
    both = {"content-encoding": "identity, gzip"}
    assert verified_body(both, packed) == body


def test_a_damaged_or_unreadable_encoding_is_refused() -> None:
    with pytest.raises(HTTPClientError, match="cannot be decoded"):
        verified_body({"content-encoding": "gzip"}, b'{"Item": {}}')
    with pytest.raises(ConfigurationError) as unreadable:
        verified_body({"content-encoding": "br"}, b"...")
    assert unreadable.value.rule == "transport.content-encoding"
    with pytest.raises(HTTPClientError):
        verified_body({"x-amz-crc32": "not a number"}, b"{}")

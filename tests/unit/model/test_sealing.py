"""The stored form of protected values: round trips, and refusals of anything tampered with."""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lsiorm import ProtectionError
from lsiorm._model.sealing import (
    REFERENCE_BYTES,
    Binding,
    DataKey,
    associated_data,
    compress,
    object_key,
    open_payload,
    parse_envelope,
    payload_of,
    reference,
    seal_payload,
    value_of,
)
from lsiorm._model.wire import from_wire, to_wire
from support.strategies import values

KEY = DataKey(os.urandom(32), "arn:aws:kms:us-east-1:111122223333:key/test", os.urandom(96))
BINDING = Binding("Notes", {"PK": {"S": "NOTE#1"}, "SK": {"S": "N"}}, "body")
COMPRESSIONS = st.sampled_from([None, "gzip", "zstd"])


def _seal(av: dict[str, Any], compression: str | None, encrypted: bool) -> bytes:
    return seal_payload(
        payload_of(av),
        compression=compression,
        level=None,
        key=KEY if encrypted else None,
        binding=BINDING if encrypted else None,
    )


def _open(raw: bytes, binding: Binding = BINDING) -> dict[str, Any]:
    envelope = parse_envelope(raw, binding)
    return value_of(open_payload(envelope, binding, KEY.plaintext), binding)


@given(value=values.filter(lambda v: v is not None), compression=COMPRESSIONS, enc=st.booleans())
def test_open_gives_back_every_value_sealed(value: Any, compression: str | None, enc: bool) -> None:
    av = to_wire(value)
    opened = _open(_seal(av, compression, enc))
    assert from_wire(opened) == from_wire(av)


def test_a_repeated_value_compresses_and_a_random_one_is_stored_as_it_is() -> None:
    assert compress(b"x" * 10_000, "gzip")[0] != 0
    random = os.urandom(2000)
    assert compress(random, "gzip") == (0, random)
    assert compress(random, "zstd") == (0, random)


def test_the_same_value_encrypts_to_different_bytes_each_time() -> None:
    av = {"S": "alice@example.com"}
    first, second = _seal(av, None, True), _seal(av, None, True)
    assert first != second
    assert b"alice" not in first
    assert _open(first) == _open(second) == av


@settings(max_examples=60)
@given(data=st.data(), compression=COMPRESSIONS)
def test_any_changed_byte_of_a_ciphertext_is_refused(data: st.DataObject, compression: Any) -> None:
    sealed = bytearray(_seal({"S": "secret " * 20}, compression, True))
    at = data.draw(st.integers(min_value=0, max_value=len(sealed) - 1))
    flip = data.draw(st.integers(min_value=1, max_value=255))
    sealed[at] ^= flip
    with pytest.raises(ProtectionError) as caught:
        _open(bytes(sealed))
    assert caught.value.rule == "protect.integrity"
    assert "secret" not in str(caught.value)


@settings(max_examples=60)
@given(data=st.data(), enc=st.booleans())
def test_any_truncated_envelope_is_refused(data: st.DataObject, enc: bool) -> None:
    sealed = _seal({"S": "secret " * 20}, "gzip", enc)
    cut = data.draw(st.integers(min_value=0, max_value=len(sealed) - 1))
    with pytest.raises(ProtectionError) as caught:
        _open(sealed[:cut])
    assert caught.value.rule == "protect.integrity"


@pytest.mark.parametrize(
    "other",
    [
        Binding("Notes", {"PK": {"S": "NOTE#2"}, "SK": {"S": "N"}}, "body"),  # another item
        Binding("Notes", {"PK": {"S": "NOTE#1"}, "SK": {"S": "N"}}, "title"),  # attribute
        Binding("Drafts", {"PK": {"S": "NOTE#1"}, "SK": {"S": "N"}}, "body"),  # table
        Binding("Notes", {"PK": {"S": "NOTE#1"}}, "body"),  # a key of another shape
    ],
)
def test_a_ciphertext_copied_elsewhere_is_refused(other: Binding) -> None:
    sealed = _seal({"S": "secret"}, None, True)
    assert _open(sealed) == {"S": "secret"}
    with pytest.raises(ProtectionError) as caught:
        _open(sealed, other)
    assert caught.value.rule == "protect.integrity"
    assert "secret" not in str(caught.value)


def test_the_binding_is_canonical_for_equal_numbers_in_the_key() -> None:
    one = Binding("T", {"PK": {"N": "1.0"}}, "a")
    same = Binding("T", {"PK": {"N": "1"}}, "a")
    assert associated_data(one) == associated_data(same)


def test_a_reference_names_the_object_by_the_digest_of_its_bytes() -> None:
    body = _seal({"B": os.urandom(5000)}, None, True)
    ref = reference(body)
    assert len(ref) == REFERENCE_BYTES
    envelope = parse_envelope(ref, BINDING)
    assert envelope.is_reference
    assert envelope.size == len(body)
    assert object_key("lsiorm/", "Notes", envelope.digest).startswith("lsiorm/Notes/")
    assert reference(body) == ref  # content-addressed: the same bytes, the same name


def test_a_payload_that_is_not_a_value_is_refused() -> None:
    sealed = seal_payload(b"not json", compression=None, level=None, key=KEY, binding=BINDING)
    with pytest.raises(ProtectionError):
        _open(sealed)

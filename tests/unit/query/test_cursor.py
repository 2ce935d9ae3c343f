"""Cursors carry an integrity check: edited, truncated and foreign cursors are refused."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lsiorm import CursorError, LsiormError
from lsiorm._query.cursor import canonical_json as _canonical
from lsiorm._query.cursor import cursor_key, decode_cursor, encode_cursor
from support.cursors import pack, raw

KEY = b"a key of these tests"

STATES: list[Any] = [
    {"pk": {"S": "T#1"}, "sk": {"S": "N#00007"}, "n": {"N": "7"}, "b": {"B": b"\x00\x01"}},
    "done",
    None,
]


def test_round_trip() -> None:
    assert decode_cursor(encode_cursor("fp", STATES, KEY), "fp", 3, KEY) == STATES


def test_a_start_key_moved_in_the_same_partition_is_refused() -> None:
    data = raw(encode_cursor("fp", STATES, KEY))
    data["s"][0]["sk"] = {"S": "N#00003"}
    with pytest.raises(CursorError) as caught:
        decode_cursor(pack(data), "fp", 3, KEY)
    assert caught.value.rule == "cursor.tampered"


@pytest.mark.parametrize(
    "value",
    [5, "7", {"X": "1"}, {"S": 7}, {"N": "seven"}, {"B64": "%%%"}, {"S": "a", "N": "1"}, []],
)
def test_a_key_value_of_the_wrong_form_is_refused_even_when_signed(value: Any) -> None:
    data = raw(encode_cursor("fp", STATES, KEY))
    data["s"][0]["sk"] = value
    with pytest.raises(CursorError) as caught:
        decode_cursor(pack(data, KEY), "fp", 3, KEY)
    assert caught.value.rule == "cursor.malformed"


@pytest.mark.parametrize("value", [None, 3, b"x", ["a"]])
def test_a_cursor_that_is_not_a_string_is_refused(value: Any) -> None:
    with pytest.raises(CursorError):
        decode_cursor(value, "fp", 3, KEY)


def test_an_unsigned_cursor_is_refused() -> None:
    data = raw(encode_cursor("fp", STATES, KEY))
    with pytest.raises(CursorError) as caught:
        decode_cursor(
            base64.urlsafe_b64encode(_canonical({**data, "m": None}).encode()).decode(),
            "fp",
            3,
            KEY,
        )
    assert caught.value.rule == "cursor.malformed"


@given(data=st.data())
def test_any_edit_or_truncation_is_refused_or_harmless(data: st.DataObject) -> None:
    cursor = encode_cursor("fp", STATES, KEY)
    how = data.draw(st.sampled_from(["cut", "replace", "insert"]))
    at = data.draw(st.integers(min_value=0, max_value=len(cursor) - 1))
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    char = data.draw(st.sampled_from(alphabet))
    if how == "cut":
        edited = cursor[:at]
    elif how == "replace":
        edited = cursor[:at] + char + cursor[at + 1 :]
    else:
        edited = cursor[:at] + char + cursor[at:]
    try:
        states = decode_cursor(edited, "fp", 3, KEY)
    except CursorError:
        return
    # Only an edit of base64 padding bits decodes to the very same cursor.
    assert states == STATES


def test_cursor_errors_are_lsiorm_errors() -> None:
    assert issubclass(CursorError, LsiormError)


def test_a_cursor_signed_with_another_key_is_refused() -> None:
    cursor = encode_cursor("fp", STATES, b"another key")
    with pytest.raises(CursorError) as caught:
        decode_cursor(cursor, "fp", 3, KEY)
    assert caught.value.rule == "cursor.tampered"


# The key every cursor was signed with when no secret was set: public, so anyone could sign.
PUBLIC_KEY = b"lsiorm cursor integrity v2"


def test_without_a_secret_each_key_is_random_so_a_public_key_forges_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("LSIORM_CURSOR_SECRET", raising=False)
    first, second = cursor_key(), cursor_key()
    assert first != second
    assert len(first) == 32
    forged = encode_cursor("fp", STATES, PUBLIC_KEY)
    with pytest.raises(CursorError) as caught:
        decode_cursor(forged, "fp", 3, first)
    assert caught.value.rule == "cursor.tampered"


def test_a_secret_given_or_from_the_environment_is_the_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LSIORM_CURSOR_SECRET", "from the environment")
    assert cursor_key() == b"from the environment"
    assert cursor_key("given") == cursor_key(b"given") == b"given"
    monkeypatch.setenv("LSIORM_CURSOR_SECRET", "")
    assert cursor_key() != cursor_key()

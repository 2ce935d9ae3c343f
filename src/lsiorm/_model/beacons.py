"""Beacons: the keyed digest an encrypted field writes into a key template, and its codec.

A beacon is HMAC-SHA-256 of a value under a key derived for its field from the keyring's beacon
key, truncated to the declared number of bits and written as lowercase hex. Equal values have
equal beacons, so a key template that holds ``{email}`` of an ``Encrypted(beacon_bits=16)``
field lets ``where(email=...)`` read the items whose beacon matches; distinct values may share a
beacon (that is what truncation is for), so the reader decrypts each candidate and keeps only
those whose value is equal (see `lsiorm._query.planner` and docs/security.md).

A beacon needs the beacon key, which only a session's keyring holds. The key is in force for the
operations a session runs (`beacon_scope`, entered by the session around each call); pure code
that derives keys outside a session (``explain()`` of such a query, ``entity.to_wire()``) enters
it with ``with keyring.beacons():``. Without one, rendering a beacon raises
``beacon.no-keyring``.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any, Final, Protocol

from lsiorm._model.codec import KeyCodec, Token
from lsiorm._model.sealing import payload_of
from lsiorm._model.wire import to_wire
from lsiorm.errors import KeyEncodingError, ValidationError

__all__ = ["BeaconCodec", "BeaconKeys", "beacon_keys", "beacon_scope", "beacon_text"]

_HEX: Final = ((0x30, 0x39), (0x61, 0x66))


class BeaconKeys(Protocol):
    """What computes beacons: a keyring's beacon key, derived per field."""

    def beacon(self, label: str, payload: bytes, bits: int) -> str:
        """The beacon of a value (its canonical bytes) of field ``label``, as hex text."""


_ACTIVE: ContextVar[BeaconKeys | None] = ContextVar("lsiorm_beacon_keys", default=None)


def beacon_keys() -> BeaconKeys | None:
    """The beacon keys in force here, or None."""
    return _ACTIVE.get()


@contextlib.contextmanager
def beacon_scope(keys: BeaconKeys | None) -> Iterator[None]:
    """Put ``keys`` in force for the code inside (nothing changes for None)."""
    if keys is None:
        yield
        return
    token = _ACTIVE.set(keys)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def field_key(beacon_key: bytes, label: str) -> bytes:
    """The beacon key of one field: an HMAC of its name under the keyring's beacon key, so
    that equal values of two fields have unrelated beacons."""
    return hmac.new(beacon_key, b"lsiorm-beacon-v1\x00" + label.encode(), hashlib.sha256).digest()


def beacon_text(key: bytes, payload: bytes, bits: int) -> str:
    """The first ``bits`` bits of HMAC-SHA-256(key, payload), as lowercase hex."""
    return hmac.new(key, payload, hashlib.sha256).hexdigest()[: bits // 4]


class BeaconCodec(KeyCodec):
    """The key codec of an encrypted field with a beacon: it writes the beacon of the value.

    Beacons keep equality only: they do not sort as the values do (``ordered`` is False, so a
    range is refused) and distinct values may share one (``injective`` is False, so a read
    checks the decrypted value). The key text does not give the value back.
    """

    python_type = object
    prefix_free = True
    ordered = False
    injective = False
    fixed_width = True

    def __init__(self, label: str, bits: int, *, field_name: str) -> None:
        self.label = label
        self.bits = bits
        self.field_name = field_name
        self.spec = ""
        self.why = f"encrypted: the key holds its {bits}-bit beacon, never the value"

    def encode(self, value: Any) -> str:
        keys = _ACTIVE.get()
        if keys is None:
            raise ValidationError(
                "beacon.no-keyring",
                f"{self.field_name} is encrypted, and its key holds a beacon computed with the "
                "keyring's beacon key: run this through a session given keyring=..., or "
                "inside `with keyring.beacons():`.",
            )
        return keys.beacon(self.label, payload_of(to_wire(value)), self.bits)

    def _parse(self, text: str) -> Any:
        raise ValueError("a beacon does not give its value back")

    def decode(self, text: str) -> Any:
        raise KeyEncodingError(
            "key.malformed",
            f"{text!r} is the beacon of field {self.field_name!r}, which gives no value back.",
        )

    def validate_prefix(self, prefix: str) -> str:
        raise KeyEncodingError(
            "encrypted.range",
            f"{self.field_name} is encrypted: its beacon keeps equality only, so begins_with "
            "cannot be asked of it.",
        )

    def tokens(self) -> list[Token]:
        return [("one", _HEX)] * (self.bits // 4)

    def text_form(self) -> tuple[Any, ...]:
        return ("BeaconCodec", self.label, self.bits)

    def __repr__(self) -> str:
        return f"BeaconCodec(bits={self.bits})"

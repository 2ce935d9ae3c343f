"""The stored form of a protected value: its envelope, pure functions with no I/O.

A protected attribute holds one binary value, the *envelope*::

    magic "\\xa5LSP" | format version (1 byte) | flags (1 byte) | body

The flags say what was done to the value's *payload* (the canonical bytes of its plain
AttributeValue, `payload_of`): ``GZIP`` or ``ZSTD`` (compressed), ``ENCRYPTED``, ``REFERENCE``
(the body names an S3 object). The body of an encrypted envelope is::

    key id length (2) | KMS key id | wrapped data key length (2) | wrapped data key |
    nonce (12) | AES-256-GCM ciphertext and tag (16)

and its associated data binds the format version, the table (as declared), the item's primary
key and the attribute name (`associated_data`), and the header before the nonce (flags, key id,
wrapped key): a ciphertext copied to another item, attribute or table does not decrypt, nor one
whose header was changed. A reference's body is the SHA-256 of the object's bytes (32) and
their length (8); the object itself is an envelope without ``REFERENCE`` (encrypted with the
same binding when the field is encrypted), named by its table and that digest (`object_key`).

Nothing here talks to KMS or S3: `seal` takes the data key it is given, `open_envelope` the
unwrapped keys; `lsiorm._ops.protection` fetches both. The AES-GCM primitive is the
``cryptography`` package's (``pip install "lsiorm[protect]"``); nothing is hand-written.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import os
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Final

from lsiorm.errors import MissingDependencyError, ProtectionError, ValidationError

__all__ = [
    "ENCRYPTED",
    "FORMAT_VERSION",
    "GZIP",
    "MAGIC",
    "REFERENCE",
    "REFERENCE_BYTES",
    "ZSTD",
    "Binding",
    "DataKey",
    "Envelope",
    "associated_data",
    "av_of",
    "compress",
    "decompress",
    "encryption_overhead",
    "is_envelope",
    "object_key",
    "parse_envelope",
    "payload_of",
    "reference",
    "seal_payload",
]

MAGIC: Final = b"\xa5LSP"
FORMAT_VERSION: Final = 1
GZIP: Final = 0x01
ZSTD: Final = 0x02
ENCRYPTED: Final = 0x04
REFERENCE: Final = 0x08
_KNOWN: Final = GZIP | ZSTD | ENCRYPTED | REFERENCE
_HEADER: Final = len(MAGIC) + 2
NONCE_BYTES: Final = 12
TAG_BYTES: Final = 16
#: The stored bytes of a reference envelope: header, SHA-256 and length.
REFERENCE_BYTES: Final = _HEADER + 32 + 8


@dataclass(frozen=True)
class Binding:
    """What a ciphertext is bound to: the table (as declared), the item's primary key (wire
    values) and the attribute."""

    table: str
    key: Mapping[str, Mapping[str, Any]]
    attribute: str

    def describe(self) -> str:
        """The binding in words, without any value of the item but its key."""
        return f"attribute {self.attribute!r} of the item {_key_text(self.key)} of {self.table!r}"


@dataclass(frozen=True)
class DataKey:
    """A data key: its plaintext (never shown), the KMS key that wrapped it, and the wrapped
    blob stored with each value."""

    plaintext: bytes
    key_id: str
    wrapped: bytes

    def __repr__(self) -> str:
        return f"DataKey(key_id={self.key_id!r}, wrapped={len(self.wrapped)} bytes)"


@dataclass(frozen=True)
class Envelope:
    """A parsed envelope: its flags and the parts of its body."""

    flags: int
    body: bytes
    key_id: str = ""
    wrapped: bytes = b""
    nonce: bytes = b""
    digest: bytes = b""
    size: int = 0
    #: The authenticated header of an encrypted envelope (all before the nonce).
    header: bytes = b""

    @property
    def encrypted(self) -> bool:
        return bool(self.flags & ENCRYPTED)

    @property
    def is_reference(self) -> bool:
        return bool(self.flags & REFERENCE)


# -- payloads -----------------------------------------------------------------------------------


def _jsonable(av: Mapping[str, Any]) -> dict[str, Any]:
    """An AttributeValue with its binary parts as base64 text (DynamoDB's JSON form)."""
    ((tag, raw),) = av.items()
    if tag == "B":
        return {"B": base64.b64encode(bytes(raw)).decode("ascii")}
    if tag == "BS":
        return {"BS": [base64.b64encode(bytes(b)).decode("ascii") for b in raw]}
    if tag == "L":
        return {"L": [_jsonable(v) for v in raw]}
    if tag == "M":
        return {"M": {k: _jsonable(v) for k, v in raw.items()}}
    if tag == "N":
        return {"N": _canonical_number(raw)}
    if tag == "NS":
        return {"NS": [_canonical_number(n) for n in raw]}
    return {tag: list(raw) if tag == "SS" else raw}


def _canonical_number(text: Any) -> str:
    from lsiorm._model.wire import number_to_wire

    try:
        return number_to_wire(Decimal(str(text)))
    except (InvalidOperation, ValueError):
        return str(text)


def _from_jsonable(data: Mapping[str, Any]) -> dict[str, Any]:
    ((tag, raw),) = data.items()
    if tag == "B":
        return {"B": base64.b64decode(raw)}
    if tag == "BS":
        return {"BS": [base64.b64decode(b) for b in raw]}
    if tag == "L":
        return {"L": [_from_jsonable(v) for v in raw]}
    if tag == "M":
        return {"M": {k: _from_jsonable(v) for k, v in raw.items()}}
    return {tag: raw}


def payload_of(av: Mapping[str, Any]) -> bytes:
    """The canonical bytes of a plain AttributeValue (sorted JSON; binary as base64)."""
    if not isinstance(av, Mapping) or len(av) != 1:
        raise ValidationError("protect.value", "A protected value must be one AttributeValue.")
    text = json.dumps(_jsonable(av), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.encode("utf-8")


def av_of(payload: bytes) -> dict[str, Any]:
    """The AttributeValue whose canonical bytes are ``payload``."""
    data = json.loads(payload.decode("utf-8"))
    if not isinstance(data, dict) or len(data) != 1:
        raise ValueError("not an AttributeValue")
    return _from_jsonable(data)


# -- compression --------------------------------------------------------------------------------


def _zstd() -> Any:
    try:
        from compression import zstd  # type: ignore[import-not-found]  # Python 3.14

        return zstd
    except ImportError:
        pass
    try:
        import zstandard  # type: ignore[import-not-found, unused-ignore]
    except ImportError as exc:
        raise MissingDependencyError("Compressed('zstd')", "zstandard", "zstd") from exc
    return zstandard


def compress(payload: bytes, algorithm: str, level: int | None = None) -> tuple[int, bytes]:
    """The flag and bytes of ``payload`` compressed; (0, payload) when that is not smaller.

    gzip is written with no time stamp, so equal payloads compress to equal bytes.
    """
    if algorithm == "zstd":
        zstd = _zstd()
        if hasattr(zstd, "ZstdCompressor") and not hasattr(zstd, "CompressionParameter"):
            packed = zstd.ZstdCompressor(level=level or 3).compress(payload)
        else:
            packed = zstd.compress(payload, level=level or 3)
        flag = ZSTD
    else:
        packed = gzip.compress(payload, compresslevel=9 if level is None else level, mtime=0)
        flag = GZIP
    return (flag, packed) if len(packed) < len(payload) else (0, payload)


def decompress(flags: int, data: bytes) -> bytes:
    """The payload of compressed bytes (as is when neither flag is set)."""
    if flags & GZIP:
        return gzip.decompress(data)
    if flags & ZSTD:
        zstd = _zstd()
        if hasattr(zstd, "ZstdDecompressor") and not hasattr(zstd, "CompressionParameter"):
            return bytes(zstd.ZstdDecompressor().decompressobj().decompress(data))
        return bytes(zstd.decompress(data))
    return data


# -- binding ------------------------------------------------------------------------------------


def _key_text(key: Mapping[str, Mapping[str, Any]]) -> str:
    return json.dumps(
        {name: _jsonable(av) for name, av in key.items()},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )


def associated_data(binding: Binding) -> bytes:
    """The associated data of a ciphertext: format version, table, primary key, attribute."""
    parts = {"v": FORMAT_VERSION, "t": binding.table, "k": _key_text(binding.key)}
    parts["a"] = binding.attribute
    return b"lsiorm-field\x00" + json.dumps(parts, sort_keys=True, ensure_ascii=False).encode()


def _aesgcm(key: bytes) -> Any:
    try:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    except ImportError as exc:  # pragma: no cover - the protect extra
        raise MissingDependencyError("Encrypted fields", "cryptography", "protect") from exc
    return AESGCM(key)


def encryption_overhead(key_id: str, wrapped: int) -> int:
    """The bytes encryption adds to a payload: header, key id, wrapped key, nonce and tag."""
    return _HEADER + 2 + len(key_id.encode()) + 2 + wrapped + NONCE_BYTES + TAG_BYTES


# -- envelopes ----------------------------------------------------------------------------------


def seal_payload(
    payload: bytes,
    *,
    compression: str | None,
    level: int | None,
    key: DataKey | None,
    binding: Binding | None,
) -> bytes:
    """The envelope of a payload: compressed as declared, then encrypted with ``key`` under
    ``binding`` (both given, or neither)."""
    flags = 0
    body = payload
    if compression is not None:
        flag, body = compress(payload, compression, level)
        flags |= flag
    if key is None:
        return MAGIC + bytes((FORMAT_VERSION, flags)) + body
    assert binding is not None
    flags |= ENCRYPTED
    key_id = key.key_id.encode()
    if len(key_id) > 0xFFFF or len(key.wrapped) > 0xFFFF:
        raise ValidationError("protect.key-id", "The KMS key id or wrapped key is too long.")
    nonce = os.urandom(NONCE_BYTES)
    header = b"".join(
        (
            MAGIC,
            bytes((FORMAT_VERSION, flags)),
            struct.pack(">H", len(key_id)),
            key_id,
            struct.pack(">H", len(key.wrapped)),
            key.wrapped,
        )
    )
    # The header is authenticated too: a changed flag, key id or wrapped key fails as a
    # changed ciphertext does.
    sealed: bytes = _aesgcm(key.plaintext).encrypt(nonce, body, associated_data(binding) + header)
    return header + nonce + sealed


def reference(body: bytes) -> bytes:
    """The reference envelope of an object whose bytes are ``body``."""
    digest = hashlib.sha256(body).digest()
    return MAGIC + bytes((FORMAT_VERSION, REFERENCE)) + digest + struct.pack(">Q", len(body))


def object_key(prefix: str, table: str, digest: bytes) -> str:
    """The S3 key of an object: the prefix, the table it belongs to (as declared), and the hex
    SHA-256 of its bytes (``lsiorm/Notes/3f2a...``). One table's objects are apart from
    another's, so collecting one table's orphans never looks at another's objects."""
    return f"{prefix}{table}/{digest.hex()}"


def is_envelope(av: Any) -> bool:
    """Whether an AttributeValue holds an envelope (binary starting with the magic)."""
    if type(av) is not dict or len(av) != 1:
        return False
    raw = av.get("B")
    return isinstance(raw, (bytes, bytearray)) and bytes(raw[: len(MAGIC)]) == MAGIC


def _broken(binding: Binding, why: str) -> ProtectionError:
    return ProtectionError(
        "protect.integrity",
        f"The stored value of {binding.describe()} is not a valid protected value ({why}); it "
        "was changed, cut short or copied from elsewhere, and is not returned.",
    )


def parse_envelope(raw: bytes, binding: Binding) -> Envelope:
    """Split an envelope into its parts; a typed error for anything malformed."""
    data = bytes(raw)
    if len(data) < _HEADER or data[: len(MAGIC)] != MAGIC:
        raise _broken(binding, "no envelope")
    version, flags = data[len(MAGIC)], data[len(MAGIC) + 1]
    if version != FORMAT_VERSION:
        raise _broken(binding, f"format version {version}")
    if flags & ~_KNOWN or (flags & GZIP and flags & ZSTD):
        raise _broken(binding, "unknown flags")
    body = data[_HEADER:]
    if flags & REFERENCE:
        if flags != REFERENCE or len(body) != 40:
            raise _broken(binding, "a malformed reference")
        return Envelope(flags, body, digest=body[:32], size=struct.unpack(">Q", body[32:])[0])
    if not flags & ENCRYPTED:
        return Envelope(flags, body)
    try:
        (n,) = struct.unpack(">H", body[:2])
        key_id = body[2 : 2 + n].decode()
        at = 2 + n
        (w,) = struct.unpack(">H", body[at : at + 2])
        wrapped = body[at + 2 : at + 2 + w]
        at += 2 + w
        nonce = body[at : at + NONCE_BYTES]
        sealed = body[at + NONCE_BYTES :]
    except (struct.error, UnicodeDecodeError):
        raise _broken(binding, "a malformed header") from None
    if len(wrapped) != w or len(nonce) != NONCE_BYTES or len(sealed) < TAG_BYTES:
        raise _broken(binding, "cut short")
    header = data[: _HEADER + at]
    return Envelope(flags, sealed, key_id=key_id, wrapped=wrapped, nonce=nonce, header=header)


def open_payload(envelope: Envelope, binding: Binding, plaintext_key: bytes | None) -> bytes:
    """The payload of an inline envelope (not a reference): decrypted with the unwrapped data
    key under ``binding`` when encrypted, then decompressed. A typed error, never data, for a
    value that was changed, cut short or copied from another item or attribute."""
    body = envelope.body
    if envelope.encrypted:
        assert plaintext_key is not None
        try:
            from cryptography.exceptions import InvalidTag
        except ImportError as exc:  # pragma: no cover - the protect extra
            raise MissingDependencyError("Encrypted fields", "cryptography", "protect") from exc
        try:
            aad = associated_data(binding) + envelope.header
            body = bytes(_aesgcm(plaintext_key).decrypt(envelope.nonce, body, aad))
        except (InvalidTag, ValueError):
            raise _broken(binding, "its authentication failed") from None
    try:
        return decompress(envelope.flags, body)
    except (OSError, EOFError, ValueError) as exc:
        raise _broken(binding, f"it does not decompress: {type(exc).__name__}") from None
    except Exception as exc:  # zstd's own error types
        raise _broken(binding, f"it does not decompress: {type(exc).__name__}") from None


def value_of(payload: bytes, binding: Binding) -> dict[str, Any]:
    """The AttributeValue of an opened payload; a typed error when it is not one."""
    try:
        return av_of(payload)
    except (ValueError, UnicodeDecodeError, KeyError, TypeError):
        raise _broken(binding, "its payload is not a value") from None

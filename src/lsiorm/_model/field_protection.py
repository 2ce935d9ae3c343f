"""The markers of protected fields (Encrypted, Compressed, Offloaded) and what they declare.

`FieldProtection` is one attribute's protection as a value; `field_protection` reads it from a
field's annotation. How a declaration with protected fields is checked, and what a table
protects, is `lsiorm._model.protection`'s.
"""

from __future__ import annotations

import typing
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final, Literal

from pydantic import GetCoreSchemaHandler
from pydantic_core import core_schema

from lsiorm._model.offloaded_ref import lazy_field_schema
from lsiorm.errors import DeclarationError

__all__ = [
    "DEFAULT_OFFLOAD_THRESHOLD",
    "MAX_BEACON_BITS",
    "MIN_BEACON_BITS",
    "Compressed",
    "Encrypted",
    "FieldProtection",
    "Offloaded",
    "field_protection",
    "protected_fields",
]

#: The shortest and longest beacon, in bits (a beacon is written as hex text: 4 bits a digit).
MIN_BEACON_BITS: Final = 4
MAX_BEACON_BITS: Final = 128
#: The default size above which an offloaded value goes to S3 (stored bytes).
DEFAULT_OFFLOAD_THRESHOLD: Final = 32 * 1024


@dataclass(frozen=True)
class Encrypted:
    """Marks a field encrypted on the client: ``Annotated[str, Encrypted()]``.

    The value is stored as AES-256-GCM ciphertext under a data key from AWS KMS, bound to the
    table, the item's primary key and the attribute (see docs/security.md). It cannot stand in
    a key template, a filter or a condition, nor be changed by ADD or ``if_not_exists``.

    ``beacon_bits`` (4 to 128, a multiple of 4) also gives the field a keyed beacon: an
    HMAC-SHA-256 of the value under the keyring's beacon key, truncated to that many bits.
    The field may then stand in a key template, where its beacon is written, so that
    ``where(email=...)`` finds items by equality; the candidates are decrypted and checked, so
    no other value is returned. Fewer bits reveal less about equal values and read more false
    candidates. ``accept_plaintext=True`` reads values stored before the field was encrypted
    (during a roll-out; see docs/security.md); without it a plain value is refused.
    """

    beacon_bits: int | None = None
    accept_plaintext: bool = False

    def __post_init__(self) -> None:
        bits = self.beacon_bits
        if bits is None:
            return
        if (
            isinstance(bits, bool)
            or not isinstance(bits, int)
            or not MIN_BEACON_BITS <= bits <= MAX_BEACON_BITS
            or bits % 4
        ):
            raise DeclarationError(
                "encrypted.beacon-bits",
                f"Encrypted(beacon_bits={bits!r}): a beacon has {MIN_BEACON_BITS} to "
                f"{MAX_BEACON_BITS} bits, a multiple of 4 (it is written as hex text).",
            )


@dataclass(frozen=True)
class Compressed:
    """Marks a field compressed: ``Annotated[str, Compressed()]`` (gzip) or
    ``Compressed("zstd")`` (needs the ``zstandard`` package, or Python 3.14's
    ``compression.zstd``). Reads decompress it; a value that compression would not make
    smaller is stored as it is. DynamoDB's 400 KB limit and the capacity model count the
    stored bytes."""

    algorithm: Literal["gzip", "zstd"] = "gzip"
    level: int | None = None

    def __post_init__(self) -> None:
        if self.algorithm not in ("gzip", "zstd"):
            raise DeclarationError(
                "compressed.algorithm",
                f"Compressed({self.algorithm!r}): the algorithms are 'gzip' and 'zstd'.",
            )


@dataclass(frozen=True)
class Offloaded:
    """Marks a field whose large values are kept in S3: ``Annotated[bytes, Offloaded()]``.

    A value whose stored bytes exceed ``threshold`` is written to the keyring's bucket as an
    object named by the SHA-256 of its bytes, before the item; the item holds a 46-byte
    reference, which is all DynamoDB's 400 KB limit and the capacity model count. Objects that
    no item references are deleted by the `collect_orphans` job, never by a write.

    Reads fetch the object as they read the item (``eager=True``, the default). With
    ``eager=False`` they do not: an entity read holds an `OffloadedRef` in the field (where the
    object is, its digest and size, no content) until ``session.load(entity)`` fetches it. An
    entity put back with the reference still unloaded keeps the stored value as it is.
    """

    threshold: int = DEFAULT_OFFLOAD_THRESHOLD
    eager: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.threshold, bool) or not isinstance(self.threshold, int):
            raise DeclarationError(
                "offload.threshold", f"Offloaded(threshold={self.threshold!r}) needs bytes."
            )
        if self.threshold < 0:
            raise DeclarationError(
                "offload.threshold", "Offloaded(threshold=...) cannot be negative."
            )
        if not isinstance(self.eager, bool):
            raise DeclarationError(
                "offload.eager", f"Offloaded(eager={self.eager!r}) needs True or False."
            )

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        """A lazy field also holds its placeholder (`OffloadedRef`) until it is loaded."""
        inner = handler(source)
        return inner if self.eager else lazy_field_schema(inner)


@dataclass(frozen=True)
class FieldProtection:
    """How one attribute's values are stored: what its markers say, as one value."""

    attribute: str
    encrypted: bool = False
    beacon_bits: int | None = None
    accept_plaintext: bool = False
    compression: Literal["gzip", "zstd"] | None = None
    level: int | None = None
    offload_threshold: int | None = None
    #: Whether reads leave the S3 object unfetched (``Offloaded(eager=False)``).
    lazy: bool = False

    @property
    def offloaded(self) -> bool:
        """Whether large values go to S3."""
        return self.offload_threshold is not None

    def describe(self) -> str:
        """The markers in words: ``encrypted (16-bit beacon), gzip, offloaded above 32768 B``."""
        parts = []
        if self.encrypted:
            beacon = f" ({self.beacon_bits}-bit beacon)" if self.beacon_bits else ""
            parts.append(f"encrypted{beacon}")
        if self.compression is not None:
            parts.append(self.compression)
        if self.offload_threshold is not None:
            lazily = ", read lazily" if self.lazy else ""
            parts.append(f"offloaded above {self.offload_threshold} B{lazily}")
        return ", ".join(parts)


def _markers(metadata: Iterable[Any]) -> list[Any]:
    return [m for m in metadata if isinstance(m, (Encrypted, Compressed, Offloaded))]


def _all_metadata(annotation: Any, metadata: Iterable[Any]) -> list[Any]:
    """The field's metadata and that of an ``Annotated`` inside ``T | None``."""
    out = list(metadata)
    for arg in typing.get_args(annotation):
        if typing.get_origin(arg) is typing.Annotated:
            out.extend(typing.get_args(arg)[1:])
    if typing.get_origin(annotation) is typing.Annotated:
        out.extend(typing.get_args(annotation)[1:])
    return out


def field_protection(
    attribute: str, annotation: Any, metadata: Iterable[Any], where: str = ""
) -> FieldProtection | None:
    """The protection a field's markers declare (None: a plain field); refuses repeats."""
    markers = _markers(_all_metadata(annotation, metadata))
    if not markers:
        return None
    kinds = [type(m) for m in markers]
    for kind in set(kinds):
        if kinds.count(kind) > 1:
            raise DeclarationError(
                "protect.repeated-marker",
                f"{where or attribute} gives {kind.__name__}(...) twice; give it once.",
            )
    enc = next((m for m in markers if isinstance(m, Encrypted)), None)
    comp = next((m for m in markers if isinstance(m, Compressed)), None)
    off = next((m for m in markers if isinstance(m, Offloaded)), None)
    return FieldProtection(
        attribute,
        encrypted=enc is not None,
        beacon_bits=enc.beacon_bits if enc is not None else None,
        accept_plaintext=enc.accept_plaintext if enc is not None else False,
        compression=comp.algorithm if comp is not None else None,
        level=comp.level if comp is not None else None,
        offload_threshold=off.threshold if off is not None else None,
        lazy=off is not None and not off.eager,
    )


def protected_fields(cls: type[Any]) -> dict[str, FieldProtection]:
    """Field name -> protection, for the protected fields of a pydantic model class."""
    out: dict[str, FieldProtection] = {}
    for name, info in cls.model_fields.items():
        attribute = info.serialization_alias or info.alias or name
        found = field_protection(
            attribute, info.annotation, info.metadata, f"{cls.__name__}.{name}"
        )
        if found is not None:
            out[name] = found
    return out

"""Lazy offloaded values: `OffloadedRef`, what a field declared ``Offloaded(eager=False)``
holds until it is loaded, and the wire form it travels in.

An entity read with a lazy offloaded field whose value is in S3 holds an `OffloadedRef` in that
field instead of the value: the object's place (bucket, key), its SHA-256 and size, whether it
is encrypted, and what it is bound to (table, item key, attribute). It holds no content, so its
``repr`` cannot show any. ``session.load(entity)`` fetches it (`lsiorm._ops.protection`).

Using it as if it were the value (``bytes(ref)``, ``len(ref)``, ``ref.decode()``, ``ref.value``,
``ref + b"..."``) raises `ProtectionError` with rule ``offload.not-loaded``, never a wrong
answer.

On the wire, between the request path and the entity codecs, a reference travels as a
`ReferenceValue`: a one-key AttributeValue under the private tag `REFERENCE_TAG`, which
remembers the stored envelope (``stored``) and its `Binding`, as an opened value does. The
codec turns it into the `OffloadedRef` and back; the request path writes the envelope it
remembers for the same item and attribute, and opens and seals the value again for any other.
"""

from __future__ import annotations

from typing import Any, Final, NoReturn

from pydantic import GetCoreSchemaHandler
from pydantic_core import core_schema

from lsiorm._model.sealing import Binding
from lsiorm._model.wire import DECODED_TAG
from lsiorm.errors import ProtectionError

__all__ = [
    "REFERENCE_TAG",
    "OffloadedRef",
    "ReferenceValue",
    "lazy_field_schema",
    "reference_of",
]

#: The tag of a reference on its way between the request path and the codecs (never sent):
#: the wire module decodes it as the placeholder it holds.
REFERENCE_TAG: Final = DECODED_TAG


class OffloadedRef:
    """An offloaded value that was not fetched: where it is and what it is, not what it holds.

    ``bucket`` and ``object_key`` name the S3 object, ``digest`` is the SHA-256 of its bytes
    (hex) and ``size`` their length; ``encrypted`` says whether they are ciphertext. ``binding``
    is the item and attribute it was read from, which an encrypted object is bound to.
    Load it with ``session.load(entity)`` (or ``await session.load(entity)``). It is immutable.

    (Not a dataclass: Pydantic would dump a dataclass as a dict, and the placeholder must stay
    itself through ``model_dump`` and ``model_copy``.)
    """

    __slots__ = ("binding", "bucket", "digest", "encrypted", "object_key", "size", "stored")

    binding: Binding
    bucket: str
    object_key: str
    digest: str
    size: int
    encrypted: bool
    #: The reference envelope as the item stores it.
    stored: bytes

    def __init__(
        self,
        binding: Binding,
        bucket: str,
        object_key: str,
        digest: str,
        size: int,
        encrypted: bool,
        stored: bytes,
    ) -> None:
        values = (binding, bucket, object_key, digest, size, encrypted, stored)
        names = ("binding", "bucket", "object_key", "digest", "size", "encrypted", "stored")
        for name, value in zip(names, values, strict=True):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> NoReturn:
        raise AttributeError(f"OffloadedRef is immutable: cannot set {name!r}")

    def __reduce__(self) -> Any:
        return (
            OffloadedRef,
            (
                self.binding,
                self.bucket,
                self.object_key,
                self.digest,
                self.size,
                self.encrypted,
                self.stored,
            ),
        )

    @property
    def attribute(self) -> str:
        return self.binding.attribute

    @property
    def table(self) -> str:
        return self.binding.table

    @property
    def value(self) -> NoReturn:
        raise self._not_loaded("its value")

    def _not_loaded(self, what: str) -> ProtectionError:
        return ProtectionError(
            "offload.not-loaded",
            f"{self.binding.describe()} is offloaded and read lazily, and was not loaded: "
            f"{what} is not here. Load it first: entity = session.load(entity).",
        )

    def __repr__(self) -> str:
        kind = "encrypted, " if self.encrypted else ""
        return (
            f"OffloadedRef({self.binding.table}.{self.binding.attribute}, {kind}{self.size} "
            f"bytes at s3://{self.bucket}/{self.object_key}, not loaded)"
        )

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        if isinstance(other, OffloadedRef):
            return self.stored == other.stored and self.binding == other.binding
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.stored, self.binding.table, self.binding.attribute))

    # -- used as if it were the value ------------------------------------------------------------

    def __bytes__(self) -> bytes:
        raise self._not_loaded("bytes(...) of it")

    def __len__(self) -> int:
        raise self._not_loaded("its length")

    def __iter__(self) -> NoReturn:
        raise self._not_loaded("iterating over it")

    def __contains__(self, item: object) -> bool:
        raise self._not_loaded("'in' on it")

    def __getitem__(self, index: object) -> NoReturn:
        raise self._not_loaded("indexing it")

    def __add__(self, other: object) -> NoReturn:
        raise self._not_loaded("adding to it")

    def __radd__(self, other: object) -> NoReturn:
        raise self._not_loaded("adding to it")

    def __getattr__(self, name: str) -> NoReturn:
        # Only names the dataclass does not have reach here: the value's own methods
        # (``decode``, ``upper``, ``startswith``...). Private and special names stay
        # AttributeError, as copy, pickle and pydantic expect.
        if name.startswith("_"):
            raise AttributeError(name)
        raise self._not_loaded(f".{name}")

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        """``bytes | OffloadedRef`` in an annotation: the placeholder passes as it is."""
        return core_schema.is_instance_schema(
            cls,
            serialization=core_schema.plain_serializer_function_ser_schema(
                _serialize_ref, info_arg=True
            ),
        )


def _serialize_ref(value: Any, info: core_schema.SerializationInfo) -> Any:
    if isinstance(value, OffloadedRef) and info.mode != "python":
        raise value._not_loaded("a JSON dump of it")
    return value


def _accept_ref(value: Any, handler: core_schema.ValidatorFunctionWrapHandler) -> Any:
    if isinstance(value, OffloadedRef):
        return value
    return handler(value)


def _dump_ref(
    value: Any, nxt: core_schema.SerializerFunctionWrapHandler, info: core_schema.SerializationInfo
) -> Any:
    if isinstance(value, OffloadedRef):
        return _serialize_ref(value, info)
    return nxt(value)


def lazy_field_schema(inner: core_schema.CoreSchema) -> core_schema.CoreSchema:
    """The schema of a lazy offloaded field: its declared type's, which also lets its
    placeholder through (validated and dumped as it is; a JSON dump of it is refused)."""
    return core_schema.no_info_wrap_validator_function(
        _accept_ref,
        inner,
        serialization=core_schema.wrap_serializer_function_ser_schema(
            _dump_ref, schema=inner, info_arg=True
        ),
    )


class ReferenceValue(dict):  # type: ignore[type-arg]
    """A reference as an AttributeValue: ``{REFERENCE_TAG: OffloadedRef}``, remembering its
    stored envelope (``stored``, what DynamoDB holds and counts) and its ``binding``."""

    __slots__ = ("binding", "stored")

    def __init__(self, ref: OffloadedRef) -> None:
        super().__init__({REFERENCE_TAG: ref})
        self.stored = {"B": ref.stored}
        self.binding = ref.binding

    @property
    def ref(self) -> OffloadedRef:
        found: OffloadedRef = self[REFERENCE_TAG]
        return found

    def __repr__(self) -> str:
        return f"ReferenceValue({self.ref!r})"

    def __reduce__(self) -> Any:
        return (ReferenceValue, (self.ref,))


def reference_of(ref: OffloadedRef) -> ReferenceValue:
    """The wire form of a placeholder (what the codecs write for it)."""
    return ReferenceValue(ref)

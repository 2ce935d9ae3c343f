"""Protected fields on the request path: values sealed on their way out, opened on the way in.

A session given a keyring holds a `Protection`. Every request passes through `send_once`
(`lsiorm._ops.pipeline`), which hands it first to `lsiorm._ops.request_sealing`: it replaces
each protected attribute's plain value in what the request writes with its envelope
(`lsiorm._model.sealing`, through `seal_item` and `seal_value` here), fetching data keys from
KMS and putting offloaded values into S3 on the way, *before* the item is written.
`open_response` opens the envelopes of every item a response holds (reads, the ``ReturnValues``
of writes, a batch's or a transaction's items, stream records). Everything above the request
path (entities, updates, batches, transactions, key jobs, the migration, dual writes) works with
plain values and never meets an envelope. All of it is generators that yield `Call` steps to KMS
and S3, so the sync and async drivers run the same code.

What an opened value remembers (`OpenedValue`): the envelope it was read as. A job that writes
back what it read under a condition that the item is unchanged (`lsiorm._ops.unchanged`)
compares the stored envelope, not the plaintext; a rewrite of the same item keeps the envelope
as it is (no KMS call, no new S3 object); a move to another key or table seals it again, since
the ciphertext is bound to both.

The order of an offloaded write: the object first, then the item that references it, so a
failure anywhere leaves at worst an object no item references (an orphan, which
`lsiorm._jobs.orphans` deletes once older than the keyring's grace period), never a reference
to nothing. A request that is sent again (a retry) sends the very same sealed values while they
are younger than half the grace period, so a transaction's idempotency token still matches; past
that, it is sealed again, which puts its objects again and so renews their age (the proof is in
docs/security.md).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Container, Iterator, Mapping, Sequence
from typing import Any, Final

from lsiorm._model.keyring import Keyring
from lsiorm._model.offloaded_ref import OffloadedRef, ReferenceValue
from lsiorm._model.protection import FieldProtection, table_protection
from lsiorm._model.schema import Table
from lsiorm._model.sealing import (
    REFERENCE_BYTES,
    Binding,
    DataKey,
    Envelope,
    encryption_overhead,
    is_envelope,
    object_key,
    open_payload,
    parse_envelope,
    payload_of,
    reference,
    seal_payload,
    value_of,
)
from lsiorm._model.wire import MAX_ITEM_BYTES, item_size
from lsiorm._ops.data_keys import DataKeyCache
from lsiorm._ops.retry import RetryPolicy, run_with_retries
from lsiorm._ops.steps import Call, Operation
from lsiorm.errors import (
    ConfigurationError,
    DynamoError,
    ItemTooLargeError,
    ProtectionError,
    ValidationError,
)

__all__ = [
    "KMS",
    "S3",
    "OpenedValue",
    "Protection",
    "as_stored",
    "item_key",
    "kept_references",
    "open_item",
    "open_reference",
    "open_response",
    "protects_any",
    "seal_item",
    "seal_value",
    "service_call",
    "table_of",
]

KMS: Final = "kms"
S3: Final = "s3"
#: The AWS KMS wrapped-key size assumed by size estimates before a data key was fetched (the
#: CiphertextBlob of an AES_256 data key under a symmetric KMS key), and an ARN's length.
ASSUMED_WRAPPED_BYTES: Final = 184
ASSUMED_KEY_ID_BYTES: Final = 75
#: How many sealed requests a session remembers, so that a retry sends the same bytes.
_RECENT_REQUESTS: Final = 256


class OpenedValue(dict):  # type: ignore[type-arg]
    """A plain AttributeValue opened from a stored envelope, which it remembers.

    It is equal to the plain value (a dict); ``stored`` is the envelope as stored and
    ``binding`` what it is bound to. Its repr never shows the value.
    """

    __slots__ = ("binding", "stored")

    def __init__(self, value: Mapping[str, Any], stored: dict[str, Any], binding: Binding):
        super().__init__(value)
        self.stored = stored
        self.binding = binding

    def __repr__(self) -> str:
        return f"OpenedValue(<{next(iter(self), '?')} value of {self.binding.attribute!r}>)"

    def __reduce__(self) -> Any:
        return (OpenedValue, (dict(self), self.stored, self.binding))


class Protection:
    """A session's keyring at work: its data-key cache, and the requests it sealed lately.

    It computes beacons too (`lsiorm._model.beacons.BeaconKeys`): the session puts it in force
    around each call, so key templates holding a beacon render with the keyring's key.
    """

    def __init__(self, keyring: Keyring, clock: Callable[[], float] = time.monotonic) -> None:
        self.keyring = keyring
        self.keys = DataKeyCache(keyring.max_age, keyring.max_uses, keyring.max_keys, clock)
        self._clock = clock
        self._lock = threading.Lock()
        self._recent: OrderedDict[int, tuple[Mapping[str, Any], dict[str, Any], float]] = (
            OrderedDict()
        )
        #: Objects put into S3 by this session (content-addressed, so puts again count too).
        self.objects_put = 0

    def beacon(self, label: str, payload: bytes, bits: int) -> str:
        """The beacon of a value of field ``label`` (see `Keyring.beacon`)."""
        return self.keyring.beacon(label, payload, bits)

    def overhead(self, table: str) -> int:
        """The bytes encryption adds to one value of ``table``: exact once a data key was
        fetched, else with AWS KMS's sizes (see `ASSUMED_WRAPPED_BYTES`)."""
        key = self.keys.current(table)
        if key is None:
            return encryption_overhead("k" * ASSUMED_KEY_ID_BYTES, ASSUMED_WRAPPED_BYTES)
        return encryption_overhead(key.key_id, len(key.wrapped))

    # -- requests sealed lately ---------------------------------------------------------------

    def recalled(self, params: Mapping[str, Any]) -> dict[str, Any] | None:
        """The sealed form of these very params, while young enough to send again."""
        with self._lock:
            found = self._recent.get(id(params))
            if found is None or found[0] is not params:
                return None
            if self._clock() - found[2] >= self.keyring.grace_seconds / 2:
                del self._recent[id(params)]
                return None
            return found[1]

    def remember(self, params: Mapping[str, Any], sealed: dict[str, Any]) -> None:
        with self._lock:
            self._recent[id(params)] = (params, sealed, self._clock())
            while len(self._recent) > _RECENT_REQUESTS:
                self._recent.popitem(last=False)

    def __repr__(self) -> str:
        return f"Protection({self.keyring!r})"


# -- KMS and S3 -----------------------------------------------------------------------------------


def service_call(
    retry: RetryPolicy, service: str, operation: str, params: dict[str, Any]
) -> Operation[dict[str, Any]]:
    """One KMS or S3 request, with the session's retries; return its answer."""

    def attempt() -> Operation[dict[str, Any]]:
        response: dict[str, Any] = yield Call(operation, params, service=service)
        return response

    return (yield from run_with_retries(retry, attempt, what=operation))


def _kms_error(exc: DynamoError, what: str) -> ProtectionError:
    error = ProtectionError(
        "protect.kms", f"KMS refused to {what} ({exc.code or type(exc).__name__})."
    )
    error.__cause__ = exc
    return error


def _encryption_key(retry: RetryPolicy, protection: Protection, table: str) -> Operation[DataKey]:
    key = protection.keys.take(table)
    if key is not None:
        return key
    keyring = protection.keyring
    if keyring.kms_key_id is None:
        raise ConfigurationError(
            "keyring.no-kms-key",
            f"Writing an encrypted field of {table!r} needs a data key: give the keyring a "
            "kms_key_id.",
        )
    params = {
        "KeyId": keyring.kms_key_id,
        "KeySpec": "AES_256",
        "EncryptionContext": {"lsiorm:table": table},
    }
    try:
        response = yield from service_call(retry, KMS, "GenerateDataKey", params)
    except DynamoError as exc:
        raise _kms_error(exc, f"generate a data key with {keyring.kms_key_id!r}") from exc
    key = DataKey(
        bytes(response["Plaintext"]),
        str(response.get("KeyId") or keyring.kms_key_id),
        bytes(response["CiphertextBlob"]),
    )
    protection.keys.put(table, key)
    return key


def _allowed_key(keyring: Keyring, key_id: str) -> bool:
    allowed = keyring.decrypt_key_ids
    if not allowed:
        return True
    return any(key_id == k or key_id.endswith(f"/{k}") or key_id.endswith(f":{k}") for k in allowed)


def _unwrapped_key(
    retry: RetryPolicy, protection: Protection, envelope: Envelope, binding: Binding
) -> Operation[bytes]:
    keyring = protection.keyring
    if not keyring.can_decrypt:
        raise ProtectionError(
            "protect.mode",
            f"The keyring is encrypt-only, so {binding.describe()} cannot be read; read it "
            "with a read-write or decrypt-only keyring.",
        )
    if not _allowed_key(keyring, envelope.key_id):
        raise ProtectionError(
            "protect.kms-key",
            f"{binding.describe()} was encrypted under KMS key {envelope.key_id!r}, which is "
            "not among the keyring's decrypt_key_ids.",
        )
    found = protection.keys.unwrapped_key(envelope.wrapped, binding.table)
    if found is not None:
        return found
    params = {
        "CiphertextBlob": envelope.wrapped,
        "KeyId": envelope.key_id,
        "EncryptionContext": {"lsiorm:table": binding.table},
    }
    try:
        response = yield from service_call(retry, KMS, "Decrypt", params)
    except DynamoError as exc:
        if exc.code in ("InvalidCiphertextException", "IncorrectKeyException"):
            raise ProtectionError(
                "protect.integrity",
                f"KMS could not unwrap the data key of {binding.describe()} (it was changed, "
                f"or belongs to another table); it is not returned ({exc.code}).",
            ) from exc
        raise _kms_error(exc, f"unwrap the data key of {binding.describe()}") from exc
    plaintext = bytes(response["Plaintext"])
    protection.keys.keep_unwrapped(envelope.wrapped, binding.table, plaintext)
    return plaintext


def _bucket(protection: Protection, binding: Binding) -> str:
    bucket = protection.keyring.bucket
    if bucket is None:
        raise ConfigurationError(
            "keyring.no-bucket",
            f"{binding.describe()} is offloaded to S3: give the keyring a bucket.",
        )
    return bucket


def _put_object(
    retry: RetryPolicy, protection: Protection, body: bytes, binding: Binding
) -> Operation[None]:
    bucket = _bucket(protection, binding)
    envelope = parse_envelope(reference(body), binding)
    params = {
        "Bucket": bucket,
        "Key": object_key(protection.keyring.prefix, binding.table, envelope.digest),
        "Body": body,
        "ContentType": "application/octet-stream",
    }
    try:
        yield from service_call(retry, S3, "PutObject", params)
    except DynamoError as exc:
        error = ProtectionError(
            "offload.s3",
            f"S3 refused the object of {binding.describe()} ({exc.code or type(exc).__name__}); "
            "the item was not written.",
        )
        raise error from exc
    with protection._lock:
        protection.objects_put += 1


def _get_object(
    retry: RetryPolicy, protection: Protection, envelope: Envelope, binding: Binding
) -> Operation[bytes]:
    params = {
        "Bucket": _bucket(protection, binding),
        "Key": object_key(protection.keyring.prefix, binding.table, envelope.digest),
    }
    try:
        response = yield from service_call(retry, S3, "GetObject", params)
    except DynamoError as exc:
        if exc.code in ("NoSuchKey", "404", "NotFound"):
            raise ProtectionError(
                "offload.missing",
                f"The S3 object of {binding.describe()} ({params['Key']}) is missing.",
            ) from exc
        raise ProtectionError(
            "offload.s3", f"S3 refused the object of {binding.describe()} ({exc.code})."
        ) from exc
    data = bytes(response.get("Body", b""))
    if len(data) != envelope.size or hashlib.sha256(data).digest() != envelope.digest:
        raise ProtectionError(
            "protect.integrity",
            f"The S3 object of {binding.describe()} does not have the bytes its reference "
            "names; it is not returned.",
        )
    return data


def _touch_object(retry: RetryPolicy, protection: Protection, ref: OffloadedRef) -> Operation[None]:
    """Put a kept reference's object again, without its bytes: S3 copies it onto itself, which
    renews its age as a put does (the orphan collection's proof needs it), and fails when the
    object is gone, so no item is written that references nothing."""
    bucket = _bucket(protection, ref.binding)
    key = object_key(protection.keyring.prefix, ref.binding.table, bytes.fromhex(ref.digest))
    params = {
        "Bucket": bucket,
        "Key": key,
        "CopySource": {"Bucket": bucket, "Key": key},
        "MetadataDirective": "REPLACE",
        "ContentType": "application/octet-stream",
    }
    try:
        yield from service_call(retry, S3, "CopyObject", params)
    except DynamoError as exc:
        if exc.code in ("NoSuchKey", "404", "NotFound"):
            raise ProtectionError(
                "offload.missing",
                f"The S3 object of {ref.binding.describe()} ({key}) is missing; the item was "
                "not written.",
            ) from exc
        raise ProtectionError(
            "offload.s3",
            f"S3 refused to renew the object of {ref.binding.describe()} ({exc.code}); the "
            "item was not written.",
        ) from exc


def open_reference(
    retry: RetryPolicy, protection: Protection, ref: OffloadedRef, spec: FieldProtection
) -> Operation[dict[str, Any]]:
    """The plain value of a lazy reference: its object fetched from the session's bucket, its
    digest and size checked, and, when encrypted, opened under the binding it was read with
    (so an object of another item, attribute or table fails as `protect.integrity`)."""
    keyring = protection.keyring
    if (
        keyring.bucket != ref.bucket
        or object_key(keyring.prefix, ref.binding.table, bytes.fromhex(ref.digest))
        != ref.object_key
    ):
        raise ValidationError(
            "offload.other-store",
            f"{ref.binding.describe()} was read from s3://{ref.bucket}/{ref.object_key}, which "
            "this session's keyring does not name (another bucket or prefix); load it with a "
            "session whose keyring read it.",
        )
    opened = yield from _open_stored(retry, protection, spec, {"B": ref.stored}, ref.binding)
    return dict(opened)


# -- one value ------------------------------------------------------------------------------------


def seal_value(
    retry: RetryPolicy,
    protection: Protection,
    spec: FieldProtection,
    av: Mapping[str, Any],
    binding: Binding,
) -> Operation[dict[str, Any]]:
    """The stored form of one plain value: its envelope, or the reference to its object."""
    if isinstance(av, OpenedValue) and av.binding == binding:
        return av.stored  # the same item and attribute: the envelope read stays valid
    if isinstance(av, ReferenceValue):
        if av.binding == binding and spec.offloaded:
            # An unloaded lazy value written back to its own item: the reference stays, its
            # object is renewed first (no fetch, no upload).
            yield from _touch_object(retry, protection, av.ref)
            return av.stored
        # Anywhere else (another key, table or attribute): opened and sealed for it.
        av = yield from open_reference(retry, protection, av.ref, spec)
    # Any other value is plain, even bytes that start like an envelope: it is sealed.
    keyring = protection.keyring
    key = None
    if spec.encrypted:
        if not keyring.can_encrypt:
            raise ProtectionError(
                "protect.mode",
                f"The keyring is decrypt-only, so {binding.describe()} cannot be written.",
            )
        key = yield from _encryption_key(retry, protection, binding.table)
    body = seal_payload(
        payload_of(av),
        compression=spec.compression,
        level=spec.level,
        key=key,
        binding=binding if key is not None else None,
    )
    threshold = spec.offload_threshold
    if threshold is not None and len(body) > threshold and len(body) > REFERENCE_BYTES:
        yield from _put_object(retry, protection, body, binding)
        body = reference(body)
    return {"B": body}


def open_value(
    retry: RetryPolicy,
    protection: Protection,
    spec: FieldProtection,
    av: Mapping[str, Any],
    binding: Binding,
    *,
    lazy: bool = False,
) -> Operation[dict[str, Any]]:
    """The plain value of a stored one (an `OpenedValue`); a plain value stored before the
    field was protected passes where the declaration allows it. With ``lazy`` (an entity read),
    a reference of a field declared ``Offloaded(eager=False)`` is not fetched: it is returned as
    its `ReferenceValue`."""
    if not is_envelope(av):
        if spec.encrypted and not spec.accept_plaintext:
            raise ProtectionError(
                "protect.plaintext",
                f"{binding.describe()} is declared encrypted but holds a plain value; it is "
                "not returned. While a field is being encrypted, declare it "
                "Encrypted(accept_plaintext=True) and back-fill it (docs/security.md).",
            )
        return dict(av)
    envelope = parse_envelope(av["B"], binding)
    if lazy and spec.lazy and envelope.is_reference:
        bucket = _bucket(protection, binding)
        ref = OffloadedRef(
            binding,
            bucket,
            object_key(protection.keyring.prefix, binding.table, envelope.digest),
            envelope.digest.hex(),
            envelope.size,
            spec.encrypted,
            bytes(av["B"]),
        )
        return ReferenceValue(ref)
    return (yield from _open_stored(retry, protection, spec, av, binding))


def _open_stored(
    retry: RetryPolicy,
    protection: Protection,
    spec: FieldProtection,
    av: Mapping[str, Any],
    binding: Binding,
) -> Operation[OpenedValue]:
    """A stored envelope opened: its object fetched when it is a reference, decrypted,
    decompressed."""
    stored = dict(av)
    envelope = parse_envelope(av["B"], binding)
    if envelope.is_reference:
        data = yield from _get_object(retry, protection, envelope, binding)
        envelope = parse_envelope(data, binding)
        if envelope.is_reference:
            raise ProtectionError(
                "protect.integrity", f"The object of {binding.describe()} is a reference."
            )
    if spec.encrypted and not envelope.encrypted and not spec.accept_plaintext:
        raise ProtectionError(
            "protect.integrity",
            f"{binding.describe()} is declared encrypted but its stored value is not; it is "
            "not returned.",
        )
    key = None
    if envelope.encrypted:
        key = yield from _unwrapped_key(retry, protection, envelope, binding)
    payload = open_payload(envelope, binding, key)
    return OpenedValue(value_of(payload, binding), stored, binding)


# -- items ----------------------------------------------------------------------------------------


def _primary(table: Table) -> tuple[str, ...]:
    return tuple(k for k in table.index_key_attributes(None) if k is not None)


def table_of(tables: Sequence[Table], name: Any) -> Table | None:
    if not isinstance(name, str):
        return None
    return next((t for t in tables if t.name == name), None)


def item_key(table: Table, item: Mapping[str, Any]) -> dict[str, Any] | None:
    key = {}
    for name in _primary(table):
        av = item.get(name)
        if av is None:
            return None
        key[name] = dict(av)
    return key


def seal_item(
    retry: RetryPolicy,
    protection: Protection,
    table: Table,
    name: str,
    item: Mapping[str, Any],
    specs: Mapping[str, FieldProtection],
    *,
    check_size: bool = True,
) -> Operation[dict[str, Any]]:
    """An item to write with its protected attributes sealed, checked against 400 KB as
    stored."""
    if not any(attr in specs for attr in item):
        return dict(item)
    key = item_key(table, item)
    if key is None:
        raise ValidationError(
            "protect.no-key",
            f"An item of {name!r} with protected attributes must hold its primary key.",
        )
    out: dict[str, Any] = {}
    for attr, av in item.items():
        spec = specs.get(attr)
        if spec is None:
            out[attr] = av
        else:
            out[attr] = yield from seal_value(retry, protection, spec, av, Binding(name, key, attr))
    if check_size:
        size = item_size(out)
        if size > MAX_ITEM_BYTES:
            raise ItemTooLargeError(
                "item.max-400kb",
                f"The item {_key_text(key)} of {name!r} is {size} bytes as stored (protected "
                f"values sealed); DynamoDB items are limited to {MAX_ITEM_BYTES} bytes (400 KB).",
                table=name,
            )
    return out


def open_item(
    retry: RetryPolicy,
    protection: Protection,
    table: Table,
    name: str,
    item: Mapping[str, Any],
    specs: Mapping[str, FieldProtection],
    *,
    lazy: bool = False,
) -> Operation[dict[str, Any]]:
    """A read item with its protected attributes opened (a projection without the key, as a
    KEYS_ONLY index gives, holds nothing to open); ``lazy``: see `open_value`."""
    if not any(attr in specs for attr in item):
        return dict(item) if type(item) is not dict else item
    key = item_key(table, item)
    if key is None:
        raise ProtectionError(
            "protect.no-key",
            f"A protected value of {name!r} was read without its item's primary key, which "
            "it is bound to; read the key attributes with it.",
        )
    out: dict[str, Any] = {}
    for attr, av in item.items():
        spec = specs.get(attr)
        if spec is None:
            out[attr] = av
        else:
            binding = Binding(name, key, attr)
            out[attr] = yield from open_value(retry, protection, spec, av, binding, lazy=lazy)
    return out


def _key_text(key: Mapping[str, Any]) -> str:
    return "{" + ", ".join(f"{k}: {next(iter(v.values()))!r}" for k, v in key.items()) + "}"


def protects_any(tables: Sequence[Table]) -> bool:
    return any(table_protection(t) for t in tables)


# -- responses ------------------------------------------------------------------------------------


def _open_items(
    retry: RetryPolicy,
    protection: Protection,
    table: Table | None,
    name: str,
    items: Sequence[Mapping[str, Any]],
    lazy: bool = False,
) -> Operation[list[Any]]:
    if table is None:
        return list(items)
    specs = table_protection(table)
    if not specs:
        return list(items)
    out = []
    for item in items:
        out.append((yield from open_item(retry, protection, table, name, item, specs, lazy=lazy)))
    return out


def _open_one(
    retry: RetryPolicy,
    protection: Protection,
    tables: Sequence[Table],
    name: Any,
    item: Mapping[str, Any] | None,
    lazy: bool = False,
) -> Operation[Any]:
    if item is None:
        return None
    table = table_of(tables, name)
    opened = yield from _open_items(retry, protection, table, str(name), [item], lazy)
    return opened[0]


def open_response(
    retry: RetryPolicy,
    protection: Protection,
    operation: str,
    params: Mapping[str, Any],
    response: dict[str, Any],
    tables: Sequence[Table],
    *,
    lazy: bool = False,
) -> Operation[dict[str, Any]]:
    """The response with the envelopes of every item it holds opened (see the module).

    ``lazy`` (a read of entities): the references of lazy offloaded fields in what it reads
    (not in what a write returns) are left unfetched (see `open_value`)."""
    if not protects_any(tables):
        return response
    name = params.get("TableName")
    out = dict(response)
    if operation == "GetItem" and "Item" in response:
        out["Item"] = yield from _open_one(retry, protection, tables, name, response["Item"], lazy)
    elif operation in ("Query", "Scan") and response.get("Items"):
        table = table_of(tables, name)
        out["Items"] = yield from _open_items(
            retry, protection, table, str(name), response["Items"], lazy
        )
    elif operation in ("PutItem", "UpdateItem", "DeleteItem") and response.get("Attributes"):
        out["Attributes"] = yield from _open_one(
            retry, protection, tables, name, response["Attributes"]
        )
    elif operation == "BatchGetItem" and response.get("Responses"):
        opened = {}
        for table_name, items in response["Responses"].items():
            table = table_of(tables, table_name)
            opened[table_name] = yield from _open_items(
                retry, protection, table, table_name, items, lazy
            )
        out["Responses"] = opened
    elif operation == "TransactGetItems" and response.get("Responses"):
        entries = []
        for action, entry in zip(
            params.get("TransactItems") or (), response["Responses"], strict=False
        ):
            got = (entry or {}).get("Item")
            table_name = action.get("Get", {}).get("TableName")
            if got is not None:
                opened = yield from _open_one(retry, protection, tables, table_name, got, lazy)
                entry = {**entry, "Item": opened}
            entries.append(entry)
        out["Responses"] = entries
    elif operation == "GetRecords" and response.get("Records"):
        out["Records"] = yield from _open_records(retry, protection, tables, response["Records"])
    return out


def _open_records(
    retry: RetryPolicy,
    protection: Protection,
    tables: Sequence[Table],
    records: Sequence[Mapping[str, Any]],
) -> Operation[list[Any]]:
    """Stream records with their images opened (they are bound to the table the stream is
    of: the first of ``tables``)."""
    table = tables[0] if tables else None
    out = []
    for record in records:
        change = record.get("dynamodb")
        if table is None or not isinstance(change, Mapping):
            out.append(record)
            continue
        change = dict(change)
        for image in ("NewImage", "OldImage"):
            if change.get(image):
                (change[image],) = yield from _open_items(
                    retry, protection, table, table.name, [change[image]]
                )
        out.append({**record, "dynamodb": change})
    return out


def as_stored(item: Mapping[str, Any], keep: Container[str] = ()) -> dict[str, Any]:
    """The item as the table holds it: each opened value replaced by its stored envelope (what
    a copy kept outside the table must hold, so that no plaintext leaves it), but those of the
    attributes in ``keep`` (which the copy's own table protects: they are sealed for it)."""
    return {
        k: v.stored if isinstance(v, (OpenedValue, ReferenceValue)) and k not in keep else v
        for k, v in item.items()
    }


def kept_references(
    found: Mapping[str, Any], ours: Mapping[str, Any]
) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """A stored item and one a write sent, comparable where the write kept a lazy value's
    reference (`ReferenceValue`): both hold their stored envelopes there."""
    refs = [attr for attr, av in ours.items() if isinstance(av, ReferenceValue)]
    if not refs:
        return found, ours
    theirs, mine = dict(found), dict(ours)
    for attr in refs:
        mine[attr] = ours[attr].stored
        if attr in theirs:
            theirs[attr] = getattr(theirs[attr], "stored", theirs[attr])
    return theirs, mine


def opened_attributes(item: Mapping[str, Any]) -> Iterator[tuple[str, OpenedValue]]:
    """The opened values of an item, by attribute."""
    for attr, av in item.items():
        if isinstance(av, OpenedValue):
            yield attr, av


def unsealed_attributes(
    ctx_protection: Protection | None, table: Table, item: Mapping[str, Any]
) -> list[str]:
    """The protected attributes of a read item that are stored plain (written before the field
    was protected): a back-fill seals them. None when the session seals nothing."""
    if ctx_protection is None:
        return []
    specs = table_protection(table)
    return [
        attr
        for attr in specs
        if attr in item and not isinstance(item[attr], (OpenedValue, ReferenceValue))
    ]


def open_stream_record(
    retry: RetryPolicy, protection: Protection, table: Table, record: Mapping[str, Any]
) -> Operation[Mapping[str, Any]]:
    """A stream record of ``table`` (as GetRecords or a Lambda event gives it) with its images
    opened."""
    opened = yield from _open_records(retry, protection, (table,), [record])
    found: Mapping[str, Any] = opened[0]
    return found

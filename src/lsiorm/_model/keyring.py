"""Keyring: what a session seals and opens protected fields with, as one picklable value.

It names keys and places, never holds a data key: the KMS key that wraps new data keys (and
the ones old values may name), the beacon key, the mode, the S3 bucket and prefix of offloaded
values, the bounds of the data-key cache, and where KMS and S3 are. A session given one
(``Session(keyring=...)``) fetches and caches data keys itself (`lsiorm._ops.protection`); the
keyring travels in ``session.config`` to the workers of a key job or a migration, which build
their own sessions and caches from it.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final, Literal

from lsiorm._model.beacons import beacon_scope, beacon_text, field_key
from lsiorm.errors import ConfigurationError

__all__ = ["Keyring", "KeyringMode"]

KeyringMode = Literal["read-write", "encrypt-only", "decrypt-only"]
_MODES: Final = ("read-write", "encrypt-only", "decrypt-only")


@functools.lru_cache(maxsize=256)
def _field_key(beacon_key: bytes, label: str) -> bytes:
    return field_key(beacon_key, label)


@dataclass(frozen=True)
class Keyring:
    """The keys and places a session protects fields with (see docs/security.md).

    ``kms_key_id`` is the KMS key that wraps new data keys (``GenerateDataKey``); values keep
    the id of the key that wrapped theirs, so after a rotation to another key they still
    decrypt (KMS unwraps each data key with the key it names). ``decrypt_key_ids``, when given,
    is the only set of KMS keys whose values this keyring opens (``protect.kms-key`` for
    another). ``beacon_key`` (32 random bytes, kept in your secret store; never shown) computes
    the beacons of ``Encrypted(beacon_bits=...)`` fields; changing it changes every beacon.

    ``mode``: ``"read-write"``; ``"encrypt-only"`` for a writer that may not read protected
    values; ``"decrypt-only"`` for a reader that may not write them. ``bucket`` and ``prefix``
    say where offloaded values go, ``grace_seconds`` how old an unreferenced object must be
    before `collect_orphans` deletes it (a writer re-sends its object when half of that has
    passed before its item write, see docs/security.md). A data key encrypts for at most
    ``max_age`` seconds and ``max_uses`` values; at most ``max_keys`` unwrapped keys are kept
    for reads, each for ``max_age`` seconds. ``kms_endpoint_url``, ``s3_endpoint_url`` and
    ``region_name`` say where KMS and S3 are (None: botocore's configuration and environment).
    """

    kms_key_id: str | None = None
    beacon_key: bytes | None = field(default=None, repr=False)
    mode: KeyringMode = "read-write"
    bucket: str | None = None
    prefix: str = "lsiorm/"
    decrypt_key_ids: tuple[str, ...] = ()
    max_age: float = 300.0
    max_uses: int = 10_000
    max_keys: int = 1_000
    grace_seconds: float = 3600.0
    kms_endpoint_url: str | None = None
    s3_endpoint_url: str | None = None
    region_name: str | None = None

    def __post_init__(self) -> None:
        if self.mode not in _MODES:
            raise ConfigurationError(
                "keyring.mode", f"Keyring(mode={self.mode!r}): the modes are {', '.join(_MODES)}."
            )
        if self.beacon_key is not None and (
            not isinstance(self.beacon_key, bytes) or len(self.beacon_key) < 16
        ):
            raise ConfigurationError(
                "keyring.beacon-key",
                "Keyring(beacon_key=...) takes at least 16 random bytes (32 recommended).",
            )
        if self.max_age <= 0 or self.max_uses < 1 or self.max_keys < 1:
            raise ConfigurationError(
                "keyring.cache", "Keyring's max_age, max_uses and max_keys must be positive."
            )
        if self.grace_seconds < 0:
            raise ConfigurationError("keyring.grace", "Keyring(grace_seconds=...) >= 0.")
        object.__setattr__(self, "decrypt_key_ids", tuple(self.decrypt_key_ids))

    @property
    def can_encrypt(self) -> bool:
        """Whether this keyring may write protected values."""
        return self.mode != "decrypt-only"

    @property
    def can_decrypt(self) -> bool:
        """Whether this keyring may read encrypted values."""
        return self.mode != "encrypt-only"

    def beacon(self, label: str, payload: bytes, bits: int) -> str:
        """The beacon of a value (its canonical bytes) of field ``label``, as hex text."""
        if self.beacon_key is None:
            raise ConfigurationError(
                "keyring.no-beacon-key",
                f"The field {label!r} has a beacon, but the keyring has no beacon_key.",
            )
        return beacon_text(_field_key(self.beacon_key, label), payload, bits)

    @contextlib.contextmanager
    def beacons(self) -> Iterator[None]:
        """Put this keyring's beacon key in force for pure code that derives keys outside a
        session: ``with keyring.beacons(): query(User).where(email=...).explain()``."""
        with beacon_scope(self):
            yield

"""Key codecs of small fixed forms: bools and UUIDs."""

from __future__ import annotations

import uuid
from typing import Any

from lsiorm._model.codec import Token, UnformattedCodec, chars, layout_tokens


class _WordBoolCodec(UnformattedCodec):
    """Booleans as one of two words, ``false_text`` and ``true_text``."""

    kind = "Bool"
    python_type = bool
    prefix_free = True
    false_text = "0"
    true_text = "1"

    def encode(self, value: Any) -> str:
        """Return the key text of the bool ``value``."""
        if not isinstance(value, bool):
            raise self.type_error(value, "a bool")
        return self.true_text if value else self.false_text

    def _parse(self, text: str) -> bool:
        if text not in (self.false_text, self.true_text):
            raise ValueError(text)
        return text == self.true_text


class BoolCodec(_WordBoolCodec):
    """Booleans, as ``0`` (False) and ``1`` (True)."""

    fixed_width = True

    def tokens(self) -> list[Token]:
        """One of ``0`` and ``1``."""
        return [("one", chars("01"))]


class UUIDCodec(UnformattedCodec):
    """UUIDs, in the canonical lowercase 36-character form (``8-4-4-4-12`` hex digits)."""

    kind = "UUID"
    python_type = uuid.UUID
    prefix_free = True
    fixed_width = True

    def encode(self, value: Any) -> str:
        """Return the key text of the UUID ``value``."""
        if not isinstance(value, uuid.UUID):
            raise self.type_error(value, "a UUID")
        return str(value)

    def tokens(self) -> list[Token]:
        """The fixed ``8-4-4-4-12`` hex layout."""
        return layout_tokens("ffffffff-ffff-ffff-ffff-ffffffffffff")

    def _parse(self, text: str) -> uuid.UUID:
        return uuid.UUID(text)


class PlainBoolCodec(_WordBoolCodec):
    """Booleans as other tools write them in text: ``false`` and ``true`` (the plain key style)."""

    false_text = "false"
    true_text = "true"

    def tokens(self) -> list[Token]:
        """``false`` or ``true``, as a superset: any of their letters."""
        return [("star", chars("falsetru"))]

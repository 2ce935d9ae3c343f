"""Generated encoders and decoders show their own source in tracebacks, pdb and profilers."""

from __future__ import annotations

import traceback

import pytest

from lsiorm import Entity, Table
from lsiorm._model.entity import decode_item
from lsiorm._model.item_encoding import WRITERS, encode_entity
from lsiorm.errors import ValidationError

table = Table("generated_code", partition_key="pk", sort_key="sk")


class Ticket(Entity, table=table, keys={"pk": "T#{owner}", "sk": "{n:06d}"}):
    owner: str
    n: int
    note: str | None = None


def generated_lines(exc: BaseException, kind: str) -> list[str]:
    """The source lines printed for frames in generated code of this kind, chained causes too.

    Each traceback entry prints the file name and then the line; without the generated source
    registered, an entry has the file name alone (and gives "" here).
    """
    printed = traceback.format_exception(type(exc), exc, exc.__traceback__)
    entries = [entry for entry in printed if f'File "<lsiorm generated {kind} Ticket-' in entry]
    assert entries, printed
    return [(entry.splitlines()[1:] or [""])[0].strip() for entry in entries]


def test_an_error_in_a_generated_encoder_shows_the_generated_line() -> None:
    partial = Ticket.model_construct(owner="o")  # no n: the encoder's validity check refuses it
    with pytest.raises(ValidationError, match=r"entity\.partial") as caught:
        encode_entity(partial)
    assert WRITERS[Ticket].fast is not None  # the class's generated encoder ran
    assert generated_lines(caught.value, "encode") == ["check_valid(meta, entity)"]


def test_an_error_in_a_generated_decoder_shows_the_generated_lines() -> None:
    wire = {
        "pk": {"S": "T#o"},
        "sk": {"S": "000001"},
        "_type": {"S": "Ticket"},
        "owner": {"S": "o"},
        "n": {"N": "not a number"},
    }
    with pytest.raises(ValidationError, match=r"wire\.malformed") as caught:
        decode_item(table, wire)
    # int() fails, then the number parse, then the whole-item decode raises lsiorm's error.
    assert generated_lines(caught.value, "decode") == [
        "out['n'] = int(raw)",
        "out['n'] = number(raw)",
        "item_from_wire(wire)",
    ]

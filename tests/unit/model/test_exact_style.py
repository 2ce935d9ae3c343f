"""The exact key style is lsiorm 0.2's encoding, byte for byte.

The corpus (``support/data/exact_keys.json``) was rendered by 0.2's encoder; these tests render
the same declarations and values again and parse every stored key back.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from lsiorm._model.entity_meta import meta_of
from support.key_corpus import CORPUS, corpus_table, declare_corpus, from_json

ROWS: list[dict[str, Any]] = json.loads(CORPUS.read_text(encoding="utf-8"))


def test_the_corpus_covers_every_entity_and_escape() -> None:
    assert {row["entity"] for row in ROWS} == {"Task", "Sluggy", "Painted", "Mixed"}
    keys = [key for row in ROWS for key in row["keys"].values()]
    assert any("\x00" in key for key in keys)
    assert any("\x01\x01" in key for key in keys)
    assert any("\x01\x02" in key for key in keys)


@pytest.fixture(scope="module")
def exact_classes() -> dict[str, Any]:
    return declare_corpus(corpus_table(key_style="exact"))


def test_exact_keys_are_the_stored_keys(exact_classes: dict[str, Any]) -> None:
    for row in ROWS:
        cls = exact_classes[row["entity"]]
        values = {k: from_json(v) for k, v in row["values"].items()}
        item = cls(**values).to_item()
        assert {k: item[k] for k in row["keys"]} == row["keys"], row


def test_stored_keys_parse_back_to_their_values(exact_classes: dict[str, Any]) -> None:
    for row in ROWS:
        meta = meta_of(exact_classes[row["entity"]])
        values = {k: from_json(v) for k, v in row["values"].items()}
        for attr, key in row["keys"].items():
            tpl = meta.templates[attr]
            assert tpl.parse(key) == {f: values[f] for f in tpl.fields}, (attr, key)

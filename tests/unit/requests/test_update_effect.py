"""The model of UpdateItem: what an update does to a stored item, what it costs, when it applied."""

from __future__ import annotations

import pytest

from lsiorm import dry_run_update
from lsiorm._model.entity_meta import meta_of
from lsiorm._model.item_encoding import wire_item
from lsiorm._requests.update_effect import PathError, applied, apply_actions
from lsiorm._requests.update_plan import plan_update, update_spec
from support.models import Address, declare_nested_doc

TABLE, DOC = declare_nested_doc()
KEY = {"did": "a"}


def test_the_model_refuses_a_path_whose_parent_is_missing() -> None:
    plan = plan_update(meta_of(DOC), KEY, update_spec(set={"address.city": "x"}))
    stored = wire_item(DOC(did="a", title="t"))
    with pytest.raises(PathError):
        apply_actions(stored, plan.actions)


def test_applied_is_true_only_when_every_change_is_stored() -> None:
    meta = meta_of(DOC)
    plan = plan_update(meta, KEY, update_spec(set={"address.city": "Oslo"}, add={"labels": {"x"}}))
    before = wire_item(DOC(did="a", title="t", address=Address(city="Rome")))
    after = apply_actions(before, plan.actions)
    assert applied(plan, after)
    assert not applied(plan, before)


def test_dry_run_update_prices_nested_and_list_changes() -> None:
    doc = DOC(did="a", title="t", history=["x" * 900])
    small = dry_run_update(doc, set={"views": 2})
    grown = dry_run_update(doc, append={"history": ["y" * 2000]})
    assert grown.total > small.total
    moved = dry_run_update(doc, set={"title": "u"})
    assert "LSI1" in moved.per_index

"""An entity bound to a table chosen at run time (`Entity.bound_to`)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lsiorm import Entity, Table
from lsiorm._model.entity_meta import meta_of
from lsiorm.errors import DeclarationError


class Job(Entity):
    """Fields only: bound to a table at run time."""

    id: str
    state: str = "pending"


def test_a_binding_declares_the_fields_on_the_table_with_its_key_attributes() -> None:
    table = Table("Orders", "pk", "sk")
    Bound = Job.bound_to(table, {"pk": "~lsiorm#jobs", "sk": "job#{id}"}, type_attribute=None)
    assert issubclass(Bound, Job)
    assert Bound.__name__ == "Job"
    assert meta_of(Bound).table is table
    assert table.entities == {"Job": Bound}
    assert Bound(id="a1").to_item() == {
        "pk": "~lsiorm#jobs",
        "sk": "job#a1",
        "id": "a1",
        "state": "pending",
    }


def test_the_same_binding_is_the_same_class_and_another_table_another() -> None:
    keys = {"PK": "JOB", "SK": "JOB#{id}"}
    first, second = Table("Shop", "PK", "SK"), Table("Shop", "PK", "SK")
    assert Job.bound_to(first, keys) is Job.bound_to(first, dict(keys))
    assert Job.bound_to(second, keys) is not Job.bound_to(first, keys)
    # another type name is another declaration on the same table
    task = Job.bound_to(first, {"PK": "JOB", "SK": "TASK#{id}"}, type_name="Task")
    assert task is not Job.bound_to(first, keys)
    assert set(first.entities) == {"Job", "Task"}


@given(st.sampled_from(["PK", "pk", "tenant_id", "Partition.Key"]), st.sampled_from(["SK", "s"]))
def test_key_attribute_names_known_at_run_time_hold_the_templates(pk: str, sk: str) -> None:
    Bound = Job.bound_to(Table("Runtime", pk, sk), {pk: "J", sk: "job#{id}"})
    item = Bound(id="7", state="done").to_item()
    assert (item[pk], item[sk]) == ("J", "job#7")


def test_a_declared_entity_is_not_bound_again() -> None:
    table = Table("Orders", "pk", "sk")
    Bound = Job.bound_to(table, {"pk": "J", "sk": "{id}"})
    with pytest.raises(DeclarationError) as caught:
        Bound.bound_to(Table("Others", "pk", "sk"), {"pk": "J", "sk": "{id}"})
    assert caught.value.rule == "entity.bound-twice"
    assert "'Orders'" in str(caught.value)


def test_a_binding_is_checked_as_a_declaration_is() -> None:
    table = Table("Orders", "pk", "sk")
    with pytest.raises(DeclarationError) as caught:
        Job.bound_to(table, {"pk": "J", "other": "{id}"})
    assert caught.value.rule == "template.unknown-attribute"
    assert table.entities == {}  # nothing is registered by a refused binding


class Doc(Entity):
    """Fields only, with a version for optimistic locking."""

    id: str
    body: str = ""
    version: int = 0


def test_a_binding_takes_a_version_field_as_a_declaration_does() -> None:
    table = Table("Docs", "pk", "sk")
    Bound = Doc.bound_to(table, {"pk": "DOC", "sk": "doc#{id}"}, version="version")
    assert meta_of(Bound).version_field == "version"
    assert Doc.bound_to(table, {"pk": "DOC", "sk": "doc#{id}"}, version="version") is Bound
    # without it, another declaration on the same table (another type name: no clash)
    plain = Doc.bound_to(table, {"pk": "DOC", "sk": "plain#{id}"}, type_name="PlainDoc")
    assert meta_of(plain).version_field is None


def test_a_bound_version_names_an_int_field() -> None:
    with pytest.raises(DeclarationError):
        Doc.bound_to(Table("Docs", "pk", "sk"), {"pk": "DOC", "sk": "{id}"}, version="body")

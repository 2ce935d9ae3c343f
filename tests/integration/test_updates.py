"""Updates typed against the model, on the engines: nested paths, lists, sets and upsert.

The effect of random updates on random stored items is compared with lsiorm's own model of
UpdateItem (``apply_actions``) on both engines, and after every one the derived key attributes
must be those the stored fields derive.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from lsiorm import (
    AsyncSession,
    ConditionFailedError,
    Entity,
    KeyAttribute,
    LocalIndex,
    OutcomeUnknownError,
    Projection,
    ServiceValidationError,
    Session,
    Table,
    TransactionCanceledError,
    Update,
    ValidationError,
    decode_item,
    not_exists,
    query,
    where,
)
from lsiorm._model.entity_meta import meta_of
from lsiorm._model.item_encoding import wire_item
from lsiorm._model.wire import item_from_wire
from lsiorm._requests.update_effect import PathError, apply_actions
from lsiorm._requests.update_plan import UpdateSpec, plan_update, update_spec
from support.engine_examples import engine_examples
from support.faults import session_losing_first_answer
from support.models import Address, Line, declare_nested_doc
from support.tables import session_with

TABLE, DOC = declare_nested_doc()


# -- against the engines ------------------------------------------------------------------


@pytest.fixture(scope="module")
def world(endpoint_url: str) -> Iterator[Session]:
    with session_with(endpoint_url, TABLE) as session:
        yield session


def stored_item(session: Session, did: str) -> dict[str, Any] | None:
    client = session.client
    got = client.get_item(
        TableName=TABLE.name, Key={"pk": {"S": f"D#{did}"}, "sk": {"S": "DOC"}}, ConsistentRead=True
    )
    item: dict[str, Any] | None = got.get("Item")
    return item


def assert_keys_derived(item: dict[str, Any]) -> None:
    """The stored key attributes are exactly those the stored fields derive."""
    entity = decode_item(TABLE, item, only=(DOC,))
    assert entity is not None
    expected = wire_item(entity)
    for attr in ("pk", "sk", "lsi1", "gpk", "gsk", "_type"):
        assert item.get(attr) == expected.get(attr), attr


def test_nested_list_and_set_updates_on_the_engine(world: Session) -> None:
    did = uuid.uuid4().hex
    world.put(DOC(did=did, title="t", address=Address(city="Rome"), lines=[Line(sku="s")]))
    got = world.update(
        DOC,
        did=did,
        set={"address.city": "Oslo", "lines[0].qty": 5, "attrs.red": 1},
        append={"history": ["a", "b"]},
        prepend={"address.lines": ["first"]},
        add={"labels": {"x", "y"}},
    )
    assert got.address == Address(city="Oslo", lines=["first"])
    assert got.lines == [Line(sku="s", qty=5)]
    assert got.attrs == {"red": 1}
    assert got.history == ["a", "b"]
    assert got.labels == {"x", "y"}
    got = world.update(
        DOC, did=did, delete={"labels": {"x"}}, prepend={"history": ["z"]}, remove=["attrs.red"]
    )
    assert got.labels == {"y"}
    assert got.history == ["z", "a", "b"]
    assert got.attrs == {}
    got = world.update(DOC, did=did, delete={"labels": {"y"}}, if_not_exists={"views": 7})
    assert got.labels is None
    assert got.views == 0
    item = stored_item(world, did)
    assert item is not None
    assert "labels" not in item
    assert_keys_derived(item)


def test_a_path_into_a_missing_parent_is_refused_by_the_engine(world: Session) -> None:
    did = uuid.uuid4().hex
    world.put(DOC(did=did, title="t"))
    with pytest.raises(ServiceValidationError):
        world.update(DOC, did=did, set={"address.city": "x"})


def test_upsert_creates_the_item_with_its_derived_keys(world: Session) -> None:
    did = uuid.uuid4().hex
    made = world.update(DOC, did=did, set={"title": "born"}, add={"views": 2}, upsert=True)
    assert made == DOC(did=did, title="born", views=2, status=None)
    item = stored_item(world, did)
    assert item is not None
    assert_keys_derived(item)
    found = world.all(query(DOC).where(did=did, title="born"))
    assert found == [made]  # found through the LSI the upsert wrote
    # On an existing item an upsert changes only what it names; defaults do not overwrite.
    again = world.update(DOC, did=did, set={"title": "born"}, upsert=True)
    assert again.status is None
    world.update(DOC, did=did, set={"status": "live"})
    again = world.update(DOC, did=did, set={"title": "again"}, add={"views": 1}, upsert=True)
    assert again.status == "live"
    assert again.views == 3
    assert again.title == "again"
    item = stored_item(world, did)
    assert item is not None
    assert_keys_derived(item)


def test_an_upsert_with_a_condition_is_a_compare_and_set_that_may_create(world: Session) -> None:
    # The upsert's own guard (no item, or one of this type) and the caller's condition are
    # sent as one condition that DynamoDB accepts (each part in one pair of parentheses).
    did = uuid.uuid4().hex
    made = world.update(
        DOC, did=did, set={"title": "first"}, upsert=True, condition=where(status=not_exists())
    )
    assert made.title == "first"
    either = where(status="live") | where(title="first")
    moved = world.update(DOC, did=did, set={"title": "second"}, upsert=True, condition=either)
    assert moved.title == "second"
    with pytest.raises(ConditionFailedError):
        world.update(DOC, did=did, set={"title": "third"}, upsert=True, condition=either)
    assert world.get(DOC, did=did, consistent=True) == moved


def test_upsert_never_turns_another_entity_into_this_one(world: Session) -> None:
    did = uuid.uuid4().hex
    foreign = {"pk": {"S": f"D#{did}"}, "sk": {"S": "DOC"}, "_type": {"S": "Invoice"}}
    world.client.put_item(TableName=TABLE.name, Item=foreign)
    with pytest.raises(ConditionFailedError, match="another type"):
        world.update(DOC, did=did, set={"title": "x"}, upsert=True)
    assert stored_item(world, did) == foreign


def test_update_forms_inside_a_transaction(world: Session) -> None:
    did = uuid.uuid4().hex
    world.transact_write([Update(DOC, {"did": did}, set={"title": "tx"}, upsert=True)])
    world.transact_write(
        [Update(DOC, {"did": did}, append={"history": ["h"]}, add={"labels": {"l"}})]
    )
    got = world.get(DOC, did=did, consistent=True)
    assert got is not None
    assert got.history == ["h"]
    assert got.labels == {"l"}
    with pytest.raises(TransactionCanceledError):
        world.transact_write([Update(DOC, {"did": uuid.uuid4().hex}, append={"history": ["h"]})])


# -- differential: random updates against the model ---------------------------------------

TEXT = st.text(alphabet="abcxyz", min_size=1, max_size=4)
LINES = st.lists(st.builds(Line, sku=TEXT, qty=st.integers(0, 9)), max_size=3)
STORED = st.builds(
    DOC,
    did=st.just("x"),
    title=TEXT,
    status=st.none() | TEXT,
    address=st.none()
    | st.builds(Address, city=TEXT, zip=st.none() | TEXT, lines=st.lists(TEXT, max_size=2)),
    lines=LINES,
    labels=st.none() | st.sets(TEXT, min_size=1, max_size=3),
    attrs=st.dictionaries(st.sampled_from(["a", "b"]), st.integers(0, 9), max_size=2),
    views=st.integers(0, 50),
    history=st.lists(TEXT, max_size=3),
)
CHANGE = st.one_of(
    st.tuples(st.just("set"), st.sampled_from(["title", "status"]), st.none() | TEXT),
    st.tuples(st.just("set"), st.sampled_from(["address.city", "address.zip"]), TEXT),
    st.tuples(st.just("set"), st.sampled_from(["lines[0].qty", "lines[2].qty"]), st.integers(0, 9)),
    st.tuples(st.just("set"), st.just("attrs.c"), st.integers(0, 9)),
    st.tuples(
        st.just("remove"),
        st.sampled_from(["address.zip", "lines[0]", "lines[1]", "attrs.a", "labels", "status"]),
        st.none(),
    ),
    st.tuples(
        st.just("if_not_exists"),
        st.sampled_from(["status", "address.zip", "attrs.b"]),
        TEXT.map(len),
    ),
    st.tuples(st.just("add"), st.sampled_from(["views", "attrs.a"]), st.integers(-3, 3)),
    st.tuples(st.just("add"), st.just("labels"), st.sets(TEXT, min_size=1, max_size=2)),
    st.tuples(st.just("delete"), st.just("labels"), st.sets(TEXT, min_size=1, max_size=2)),
    st.tuples(
        st.sampled_from(["append", "prepend"]),
        st.sampled_from(["history", "address.lines"]),
        st.lists(TEXT, min_size=1, max_size=2),
    ),
)


def spec_of(changes: list[tuple[str, str, Any]]) -> UpdateSpec | None:
    kinds: dict[str, dict[str, Any]] = {}
    removes: list[str] = []
    for op, path, value in changes:
        if op == "remove":
            removes.append(path)
            continue
        if op == "if_not_exists" and path in ("status", "address.zip"):
            value = str(value)
        kinds.setdefault(op, {})[path] = value
    return update_spec(
        set=kinds.get("set"),
        remove=removes,
        add=kinds.get("add"),
        delete=kinds.get("delete"),
        append=kinds.get("append"),
        prepend=kinds.get("prepend"),
        if_not_exists=kinds.get("if_not_exists"),
    )


@engine_examples(40)
@given(before=STORED, changes=st.lists(CHANGE, min_size=1, max_size=4))
def test_random_updates_do_what_the_model_says(
    world: Session, before: Any, changes: list[tuple[str, str, Any]]
) -> None:
    did = uuid.uuid4().hex
    before = before.model_copy(update={"did": did})
    spec = spec_of(changes)
    assert spec is not None
    meta = meta_of(DOC)
    try:
        plan = plan_update(meta, {"did": did}, spec)
    except ValidationError as exc:
        refused = exc.rule
    else:
        refused = None
    if refused is not None:
        note(f"refused: {refused}")
        allowed = {"update.overlapping-paths", "update.remove-required", "field.invalid"}
        assert refused in allowed
        return
    world.put(before)
    start = stored_item(world, did)
    assert start is not None
    try:
        expected: dict[str, Any] | None = apply_actions(start, plan.actions)
    except PathError:
        expected = None
    if expected is None:
        with pytest.raises(ServiceValidationError):
            world.update(DOC, did=did, **_kwargs(spec))
        assert stored_item(world, did) == start
        return
    returned = world.update(DOC, did=did, **_kwargs(spec))
    after = stored_item(world, did)
    assert after is not None
    note(f"start={start}\nafter={after}\nexpected={expected}")
    assert item_from_wire(after) == item_from_wire(expected)
    assert returned == decode_item(TABLE, after, only=(DOC,))
    assert_keys_derived(after)


def _kwargs(spec: UpdateSpec) -> dict[str, Any]:
    return {
        "set": spec.set,
        "remove": spec.remove,
        "add": spec.add,
        "delete": spec.delete,
        "append": spec.append,
        "prepend": spec.prepend,
        "if_not_exists": spec.if_not_exists,
    }


# -- timestamps ---------------------------------------------------------------------------


STAMP_TABLE = Table(
    f"stamp_{uuid.uuid4().hex[:8]}",
    "pk",
    "sk",
    local_indexes=[LocalIndex("Recent", KeyAttribute("lsi1"), projection=Projection.all())],
)


class Note(
    Entity,
    table=STAMP_TABLE,
    keys={"pk": "N#{owner}", "sk": "N#{nid}", "lsi1": "{changed}"},
    created_at="made",
    updated_at="changed",
):
    owner: str
    nid: str
    text: str = ""
    made: datetime | None = None
    changed: datetime | None = None


@pytest.fixture(scope="module")
def notes(endpoint_url: str) -> Iterator[Session]:
    with session_with(endpoint_url, STAMP_TABLE) as session:
        yield session


def test_put_and_update_set_the_timestamps(notes: Session) -> None:
    owner = uuid.uuid4().hex
    t0 = datetime.now(timezone.utc)
    first = notes.put(Note(owner=owner, nid="1"))
    assert first.made is not None
    assert first.changed is not None
    assert t0 - timedelta(seconds=1) <= first.made == first.changed
    later = notes.update(Note, owner=owner, nid="1", set={"text": "x"})
    assert later.made == first.made
    assert later.changed is not None
    assert later.changed >= first.changed
    # Putting what was read keeps its creation time.
    again = notes.put(later.model_copy(update={"text": "y"}))
    assert again.made == first.made
    # An upsert that creates sets both; one that finds the item keeps made.
    created = notes.update(Note, owner=owner, nid="2", set={"text": "u"}, upsert=True)
    assert created.made is not None
    assert created.made == created.changed
    kept = notes.update(Note, owner=owner, nid="1", set={"text": "z"}, upsert=True)
    assert kept.made == first.made
    # The index on the update time stays consistent: newest first.
    newest = notes.all(query(Note).where(owner=owner).using("Recent").descending())
    assert next(n.nid for n in newest) == "1"
    assert {n.nid for n in newest} == {"1", "2"}
    # Setting the field by hand wins.
    fixed = datetime(2020, 1, 1, tzinfo=timezone.utc)
    assert notes.update(Note, owner=owner, nid="2", set={"changed": fixed}).changed == fixed


def test_conditions_still_apply(world: Session) -> None:
    did = uuid.uuid4().hex
    world.put(DOC(did=did, title="t", views=1))
    with pytest.raises(ConditionFailedError):
        world.update(DOC, did=did, append={"history": ["x"]}, condition=where(views=2))


def test_batch_writes_set_the_timestamps(notes: Session) -> None:
    owner = uuid.uuid4().hex
    made = datetime(2021, 5, 1, tzinfo=timezone.utc)
    notes.batch_write(puts=[Note(owner=owner, nid="a"), Note(owner=owner, nid="b", made=made)])
    a = notes.get(Note, owner=owner, nid="a", consistent=True)
    b = notes.get(Note, owner=owner, nid="b", consistent=True)
    assert a is not None
    assert a.made is not None
    assert a.made == a.changed
    assert b is not None
    assert b.made == made
    assert b.changed is not None
    assert b.changed > made


# -- answers lost on the way back -----------------------------------------------------------


def test_a_conditional_nested_update_whose_answer_was_lost_reports_success(
    world: Session, endpoint_url: str
) -> None:
    did = uuid.uuid4().hex
    world.put(DOC(did=did, title="t", address=Address(city="Rome")))
    with session_losing_first_answer(endpoint_url) as (session, faults, hook):
        got = session.update(
            DOC,
            did=did,
            set={"address.city": "Oslo", "title": "t2"},
            add={"labels": {"x"}},
            remove=["attrs.a"],
            condition=where(title="t"),  # false once the first attempt is applied
        )
    assert hook.errors  # the first answer was lost, and the update was sent again
    assert faults.stats["forwarded"] == 2
    assert got.address == Address(city="Oslo")
    assert got.labels == {"x"}
    assert world.get(DOC, did=did, consistent=True) == got


def test_an_append_whose_answer_was_lost_is_never_applied_twice(
    world: Session, endpoint_url: str
) -> None:
    did = uuid.uuid4().hex
    world.put(DOC(did=did, title="t"))
    with (
        session_losing_first_answer(endpoint_url) as (session, faults, _hook),
        pytest.raises(OutcomeUnknownError),
    ):
        session.update(DOC, did=did, append={"history": ["once"]})
    assert faults.stats["forwarded"] == 1  # never re-sent
    stored = world.get(DOC, did=did, consistent=True)
    assert stored is not None
    assert stored.history == ["once"]


def test_an_upsert_whose_answer_was_lost_creates_one_item(
    world: Session, endpoint_url: str
) -> None:
    did = uuid.uuid4().hex
    with session_losing_first_answer(endpoint_url) as (session, _faults, hook):
        got = session.update(
            DOC, did=did, set={"title": "u"}, if_not_exists={"views": 3}, upsert=True
        )
    assert hook.errors
    assert got == DOC(did=did, title="u", views=3, status=None)
    assert world.get(DOC, did=did, consistent=True) == got


async def test_async_session_takes_every_update_form(world: Session, endpoint_url: str) -> None:
    did = uuid.uuid4().hex
    async with AsyncSession(endpoint_url=endpoint_url) as session:
        made = await session.update(
            DOC, did=did, set={"title": "a"}, append={"history": ["x"]}, upsert=True
        )
        assert made.history == ["x"]
        got = await session.update(
            DOC,
            did=did,
            prepend={"history": ["w"]},
            add={"labels": {"l"}},
            if_not_exists={"status": "set"},
        )
        assert got.history == ["w", "x"]
        assert got.labels == {"l"}
        assert got.status == "set"
        got = await session.update(got, delete={"labels": {"l"}})
        assert got.labels is None
    item = stored_item(world, did)
    assert item is not None
    assert_keys_derived(item)

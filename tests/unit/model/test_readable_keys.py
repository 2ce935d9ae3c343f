"""Key styles on entities: readable keys (the default before printable keys), the exact style,
the plain style. The printable style, the default, has its own tests (test_printable_keys).

The readable keys here are the ones the issue that asked for them measured with lsiorm 0.2
(``P#web\\x00#TASK#00007`` and so on); the exact twins keep 0.2's text.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import date, datetime, timezone
from enum import Enum
from typing import Annotated, Any, Literal

import pytest
from pydantic import Field, StringConstraints

from lsiorm import Entity, KeyFormat, Table, begins_with, between, gt, key_layout, query
from lsiorm._model.entity_meta import meta_of
from lsiorm.errors import DeclarationError, KeyEncodingError, QueryPlanError
from support.oracles import sort_key_selects


class Color(str, Enum):
    RED = "red"
    GREEN = "green"


Slug = Annotated[str, StringConstraints(pattern=r"^[a-z0-9-]+$")]
U = uuid.UUID("3b53690a-1464-6e57-e3b9-9c58cae64fa6")


def declare(table: Table, **options: Any) -> dict[str, type[Entity]]:
    """The issue's three declarations, on ``table``, with ``options`` for each entity."""

    class Project(
        Entity, table=table, keys={"PK": "P", "SK": "P#{project}#TASK#{n:05d}"}, **options
    ):
        project: str
        n: int

    class Sluggy(Entity, table=table, keys={"PK": "Q", "SK": "Q#{slug}#TASK#{n:05d}"}, **options):
        slug: Slug
        n: int

    class Painted(
        Entity, table=table, keys={"PK": "U", "SK": "U#{u}#C#{color}#L#{lit}#X"}, **options
    ):
        u: uuid.UUID
        color: Color
        lit: Literal["aa", "bb"]

    return {"Project": Project, "Sluggy": Sluggy, "Painted": Painted}


def _sort_keys(classes: dict[str, type[Entity]]) -> dict[str, str]:
    rows = {
        "Project": {"project": "web", "n": 7},
        "Sluggy": {"slug": "web", "n": 7},
        "Painted": {"u": U, "color": Color.RED, "lit": "aa"},
    }
    return {name: classes[name](**rows[name]).to_item()["SK"] for name in rows}


EXACT = {
    "Project": "P#web\x00#TASK#00007",
    "Sluggy": "Q#web\x00#TASK#00007",
    "Painted": f"U#{U}#C#red\x00#L#aa\x00#X",
}


def test_readable_keys_need_no_terminator_where_the_type_proves_it() -> None:
    assert _sort_keys(declare(Table("Readable", "PK", "SK", key_style="readable"))) == {
        "Project": "P#web\x00#TASK#00007",  # unconstrained text keeps its terminator
        "Sluggy": "Q#web#TASK#00007",
        "Painted": f"U#{U}#C#red#L#aa#X",
    }


def test_the_exact_style_keeps_0_2_keys_from_the_table() -> None:
    assert _sort_keys(declare(Table("Exact", "PK", "SK", key_style="exact"))) == EXACT


def test_the_exact_style_keeps_0_2_keys_from_the_entity() -> None:
    table = Table("ExactEntity", "PK", "SK")
    assert _sort_keys(declare(table, key_style="exact")) == EXACT


def test_a_field_style_wins_over_the_entity_and_the_table() -> None:
    table = Table("FieldWins", "PK", "SK", key_style="exact")

    class Mixed(Entity, table=table, key_style="plain", keys={"PK": "M", "SK": "{a}#{b}#{c}#{n}"}):
        a: Annotated[Color, KeyFormat(style="readable")]
        b: Annotated[Color, KeyFormat(style="exact")]
        c: Color
        n: int

    item = Mixed(a=Color.RED, b=Color.GREEN, c=Color.RED, n=4).to_item()
    assert item["SK"] == "red#green\x00#red#4"
    assert [(f.field, f.style, f.form) for f in key_layout(Mixed).fields] == [
        ("a", "readable", "plain"),
        ("b", "exact", "terminated"),
        ("c", "plain", "plain"),
        ("n", "plain", "plain"),
    ]


def test_fixed_width_forms_are_the_same_in_every_style() -> None:
    for style in ("readable", "exact"):
        table = Table(f"Fixed{style}", "PK", "SK", key_style=style)

        class Fixed(Entity, table=table, keys={"PK": "F", "SK": "{d}#{n:04d}#{u}#{at:s}#X"}):
            d: date
            n: int
            u: uuid.UUID
            at: datetime

        item = Fixed(
            d=date(2024, 5, 1), n=-7, u=U, at=datetime(2024, 5, 1, 12, tzinfo=timezone.utc)
        ).to_item()
        assert item["SK"] == f"2024-05-01#-9993#{U}#2024-05-01T12:00:00Z#X"


def test_key_layout_says_why() -> None:
    classes = declare(Table("Layout", "PK", "SK", key_style="readable"))
    layouts = {
        name: [(f.attribute, f.field, f.form, f.why) for f in key_layout(cls).fields]
        for name, cls in classes.items()
    }
    assert layouts == {
        "Project": [
            (
                "SK",
                "project",
                "terminated",
                "its text is unconstrained and '#TASK#' follows (an Enum, a Literal, an "
                "anchored pattern or a declared alphabet can prove it needs no terminator)",
            ),
            ("SK", "n", "fixed-width", "its length ends it"),
        ],
        "Sluggy": [
            (
                "SK",
                "slug",
                "plain",
                "the characters its pattern '^[a-z0-9-]+$' allows ([\\-0-9a-z]) all sort above "
                "'#', so the '#TASK#' that follows ends the text",
            ),
            ("SK", "n", "fixed-width", "its length ends it"),
        ],
        "Painted": [
            ("SK", "u", "fixed-width", "its length ends it"),
            (
                "SK",
                "color",
                "plain",
                "its values (a closed set of 2) all sort above '#', so the '#L#' that follows "
                "ends the text",
            ),
            (
                "SK",
                "lit",
                "plain",
                "its values (a closed set of 2) all sort above '#', so the '#X' that follows "
                "ends the text",
            ),
        ],
    }
    text = str(key_layout(classes["Painted"]))
    assert text.splitlines()[:2] == ["Key layout of Painted", "  SK 'U#{u}#C#{color}#L#{lit}#X'"]


def test_explain_shows_the_layout() -> None:
    classes = declare(Table("Explained", "PK", "SK", key_style="readable"))
    text = str(query(classes["Sluggy"]).where(slug="web").explain())
    assert "layout      Sluggy SK 'Q#{slug}#TASK#{n:05d}' e.g. 'Q#ab#TASK#00007'" in text
    assert "Sluggy.slug in SK: plain (readable), the characters its pattern" in text


def test_readable_keys_parse_back() -> None:
    classes = declare(Table("Parse", "PK", "SK", key_style="readable"))
    painted = meta_of(classes["Painted"]).templates["SK"]
    assert painted.parse(f"U#{U}#C#red#L#bb#X") == {"u": U, "color": Color.RED, "lit": "bb"}
    with pytest.raises(KeyEncodingError):
        painted.parse(f"U#{U}#C#red\x00#L#bb\x00#X")  # the exact form is another template's


def test_values_outside_the_proof_are_refused_by_the_codec() -> None:
    # Writes validate entities first (also model_construct ones); the codec refuses such a
    # value by itself too, so that no key relies on a check made elsewhere.
    classes = declare(Table("Outside", "PK", "SK", key_style="readable"))
    sluggy = meta_of(classes["Sluggy"]).templates["SK"]
    with pytest.raises(KeyEncodingError) as refused:
        sluggy.render({"slug": "Web#1", "n": 1})
    assert refused.value.rule == "key.outside-alphabet"
    painted = meta_of(classes["Painted"]).templates["SK"]
    with pytest.raises(KeyEncodingError) as refused:
        painted.render({"u": U, "color": Color.RED, "lit": "cc"})
    assert refused.value.rule == "key.literal-value"


def test_declared_alphabets_are_enforced_in_every_style() -> None:
    for style in ("printable", "readable", "exact", "plain"):
        table = Table(f"Alpha{style}", "PK", "SK", key_style=style)

        class Code(Entity, table=table, keys={"PK": "C", "SK": "C#{code}#{n:03d}"}):
            code: Annotated[str, KeyFormat(alphabet="A-Z0-9")]
            n: int

        key = Code(code="AB1", n=2).to_item()["SK"]
        # The plain style keeps a padded int's width when its format spec asks for one.
        assert key == ("C#AB1\x00#002" if style == "exact" else "C#AB1#002")
        with pytest.raises(KeyEncodingError) as refused:
            Code(code="ab", n=1).to_item()
        assert refused.value.rule == "key.outside-alphabet"


@pytest.mark.parametrize(
    ("annotation", "rule"),
    [
        (Annotated[int, KeyFormat("04d", alphabet="0-9")], "template.format-option"),
        (Annotated[str, KeyFormat(case="lower")], "template.format-option"),
        (Annotated[str, KeyFormat(style="plain", case="title")], "template.format-option"),  # type: ignore[arg-type]
        (Annotated[str, KeyFormat(style="fancy")], "template.key-style"),  # type: ignore[arg-type]
        (Annotated[str, KeyFormat(alphabet="z-a")], "template.alphabet"),
        (
            Annotated[str, KeyFormat(style="plain"), KeyFormat(style="exact")],
            "template.format-conflict",
        ),
        (Annotated[float, KeyFormat(style="plain")], "template.plain-type"),
        (Annotated[date, KeyFormat(style="plain", datetime_format="%Y")], "template.format-option"),
    ],
)
def test_key_format_options_are_checked(annotation: Any, rule: str) -> None:
    table = Table("Options", "PK", "SK")
    with pytest.raises(DeclarationError) as refused:

        class Bad(Entity, table=table, keys={"PK": "B", "SK": "B#{value}#X"}):
            value: annotation  # type: ignore[valid-type]

    assert refused.value.rule == rule


def test_key_styles_are_checked_on_tables_and_entities() -> None:
    with pytest.raises(DeclarationError) as refused:
        Table("Styled", "PK", "SK", key_style="pretty")  # type: ignore[arg-type]
    assert refused.value.rule == "template.key-style"
    table = Table("Styled", "PK", "SK")
    with pytest.raises(DeclarationError) as refused:

        class Bad(Entity, table=table, key_style="pretty", keys={"PK": "B", "SK": "B"}):  # type: ignore[arg-type]
            pass

    assert refused.value.rule == "template.key-style"


# -- key ranges over readable plain text ---------------------------------------------------------

ranges_table = Table("ReadableRanges", "PK", "SK", key_style="readable")


class Tagged(Entity, table=ranges_table, keys={"PK": "T", "SK": "T#{color}#{slug}#{n:03d}"}):
    color: Literal["red", "reddish", "blue", "b"]
    slug: Slug
    n: int


STORED = [
    {"color": c, "slug": s, "n": n}
    for c in ("red", "reddish", "blue", "b")
    for s in ("a", "a-b", "ab", "b0", "z")
    for n in (0, 5)
]


@pytest.mark.parametrize(
    ("conditions", "check"),
    [
        ({"color": "red"}, lambda r: r["color"] == "red"),
        ({"color": gt("red")}, lambda r: r["color"] > "red"),
        ({"color": between("b", "red")}, lambda r: "b" <= r["color"] <= "red"),
        ({"color": begins_with("re")}, lambda r: r["color"].startswith("re")),
        ({"color": "red", "slug": gt("a")}, lambda r: r["color"] == "red" and r["slug"] > "a"),
        (
            {"color": "b", "slug": between("a-b", "b0")},
            lambda r: r["color"] == "b" and "a-b" <= r["slug"] <= "b0",
        ),
        (
            {"color": "red", "slug": begins_with("a")},
            lambda r: r["color"] == "red" and r["slug"].startswith("a"),
        ),
    ],
)
def test_ranges_over_readable_text_are_exact(conditions: dict[str, Any], check: Any) -> None:
    plan = query(Tagged).where(**conditions).plan()
    assert not plan.fallback_filters
    assert not plan.has_filter
    (request,) = plan.requests
    template = meta_of(Tagged).templates["SK"]
    for row in STORED:
        assert sort_key_selects(request.params, template.render(row)) == check(row), row


def test_a_prefix_no_value_starts_with_reads_nothing() -> None:
    plan = query(Tagged).where(color=begins_with("red#")).plan()
    assert plan.empty is not None
    assert not plan.requests


# -- the plain style ---------------------------------------------------------------------------

plain_table = Table("PlainKeys", "PK", "SK", key_style="plain")


class Order(Entity, table=plain_table, keys={"PK": "USER#{user}", "SK": "ORDER#{day}#{ref}"}):
    user: int
    day: date
    ref: str


class Note(Entity, table=plain_table, keys={"PK": "N#{user}", "SK": "{topic}#{n}#{at}"}):
    user: int
    topic: str
    n: int
    at: Annotated[datetime, KeyFormat(datetime_format="%Y-%m-%dT%H:%M:%S.%f+0000")]
    title: str = Field(default="", alias="Title")


def test_plain_keys_are_the_values_as_other_tools_write_them() -> None:
    at = datetime(2024, 5, 1, 10, 0, 0, 123456, tzinfo=timezone.utc)
    assert Order(user=42, day=date(2024, 5, 1), ref="A17").to_item()["PK"] == "USER#42"
    assert Order(user=42, day=date(2024, 5, 1), ref="A17").to_item()["SK"] == "ORDER#2024-05-01#A17"
    note = Note(user=-3, topic="a#b", n=10, at=at).to_item()
    assert (note["PK"], note["SK"]) == ("N#-3", "a#b#10#2024-05-01T10:00:00.123456+0000")


def test_plain_equality_on_text_that_may_hold_the_separator_checks_the_attribute() -> None:
    plan = query(Note).where(user=1, topic="a").plan()
    assert plan.key_condition == "#n0 = :v0 AND begins_with(#n1, :v1)"
    assert plan.values[":v1"] == {"S": "a#"}
    assert plan.filter == "#n2 = :v2"
    assert plan.names["#n2"] == "topic"
    assert plan.plain_checks == ("topic = 'a'",)
    assert "a plain key text may hold its separator" in str(plan_explained(plan))


def test_plain_equality_on_text_items_do_not_store_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Items whose key fields live only in their keys cannot be checked: refused, never guessed.
    monkeypatch.setattr(Note, "__lsiorm__", replace(meta_of(Note), key_only_fields={"topic"}))
    with pytest.raises(QueryPlanError) as refused:
        query(Note).where(user=1, topic="a").plan()
    assert refused.value.rule == "query.plain-ambiguous"
    assert "do not store topic" in str(refused.value)
    assert "printable key style (the default)" in str(refused.value)
    # Where the separator cannot be in the way, nothing needs checking.
    assert query(Note).where(user=1).plan().filter is None


def plan_explained(plan: Any) -> str:
    from lsiorm._query.explain import Explanation

    return str(Explanation(plan))


def test_plain_equality_where_the_separator_cannot_occur_is_exact() -> None:
    plan = query(Order).where(user=42, day=date(2024, 5, 1)).plan()
    assert not plan.has_filter
    assert plan.values[":v1"] == {"S": "ORDER#2024-05-01#"}


def test_plain_ranges_are_exact_only_where_text_sorts_as_values() -> None:
    # A date is fixed width, and text that ends its template sorts as it is.
    assert not query(Order).where(user=1, day=gt(date(2024, 1, 1))).plan().has_filter
    assert not query(Order).where(user=1, day=date(2024, 1, 1), ref=gt("A")).plan().has_filter
    # Unpadded numbers do not sort as numbers: refused before sending, with the fix.
    with pytest.raises(QueryPlanError) as refused:
        query(Note).where(user=1, topic="a", n=gt(3)).plan()
    assert refused.value.rule == "query.plain-range"
    assert "printable key style (the default)" in str(refused.value)
    fallback = query(Note).where(user=1, topic="a", n=gt(3)).allow_filter_fallback().plan()
    assert fallback.fallback_filters == ("n > 3",)


def test_a_filtered_plain_range_is_empty_by_value_order_not_text_order() -> None:
    # "9" sorts after "11" as text, but 9..11 holds values: the filter is sent, not skipped.
    q = query(Note).where(user=1, topic="a", n=between(9, 11)).allow_filter_fallback()
    plan = q.plan()
    assert plan.empty is None
    assert plan.fallback_filters == ("n between 9 and 11",)
    assert query(Note).where(user=1, n=between(11, 9)).allow_filter_fallback().plan().empty


def test_plain_text_folded_to_one_case_is_checked_on_the_attribute() -> None:
    table = Table("Folded", "PK", "SK")

    class Person(Entity, table=table, keys={"PK": "P", "SK": "NAME#{name}"}):
        name: Annotated[str, KeyFormat(style="plain", case="lower")]

    assert Person(name="Ada").to_item()["SK"] == "NAME#ada"
    plan = query(Person).where(name="Ada").plan()
    assert plan.values[":v1"] == {"S": "NAME#ada"}
    assert plan.plain_checks == ("name = 'Ada'",)
    with pytest.raises(QueryPlanError) as refused:
        query(Person).where(name=gt("A")).plan()
    assert refused.value.rule == "query.plain-range"


def test_plain_fields_followed_directly_by_another_are_refused() -> None:
    table = Table("Adjacent", "PK", "SK", key_style="plain")
    with pytest.raises(DeclarationError) as refused:

        class Bad(Entity, table=table, keys={"PK": "A", "SK": "{n}{m}"}):
            n: int
            m: int

    assert refused.value.rule == "template.ambiguous-fields"


def test_plain_datetime_formats() -> None:
    table = Table("PlainTimes", "PK", "SK", key_style="plain")

    class Stamp(Entity, table=table, keys={"PK": "S", "SK": "{at}"}):
        at: Annotated[datetime, KeyFormat(datetime_format="%Y-%m-%dT%H:%M:%SZ")]

    codec = meta_of(Stamp).templates["SK"].slots[0].codec
    assert codec is not None
    assert codec.ordered
    whole = datetime(2024, 5, 1, 10, tzinfo=timezone.utc)
    assert codec.encode(whole) == "2024-05-01T10:00:00Z"
    assert codec.decode("2024-05-01T10:00:00Z") == whole
    with pytest.raises(KeyEncodingError) as refused:
        codec.encode(whole.replace(microsecond=5))
    assert refused.value.rule == "key.datetime-precision"
    assert not query(Stamp).where(at=gt(whole)).plan().has_filter

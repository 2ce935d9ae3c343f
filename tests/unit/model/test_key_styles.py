"""Readable keys: the proofs that plain text is exact, checked by properties and by example.

A str-like field followed by a literal ``L`` is stored as it is, with ``L[0]`` as its
terminator, only when its declared type proves that no value holds ``L[0]`` and that the text
order stays the value order across ``L``. The properties below check, over every kind of
declaration lsiorm stores plain (closed sets, pattern alphabets, declared alphabets) and many
literals, that keys sort as the values (then the rest of the key) do, that no value's text is
a prefix of another's across the literal, and that parsing a rendered key gives the values
back. ``test_the_properties_catch_a_broken_proof`` shows that they fail when the rule is
loosened.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

from lsiorm._model import key_styles
from lsiorm._model.codec import CharSet, KeyCodec
from lsiorm._model.key_styles import alphabet_refusal, closed_set_refusal, text_codec
from lsiorm._model.patterns import alphabet_chars, pattern_alphabet
from lsiorm._model.template import FieldSlot, KeyTemplate
from lsiorm._model.text_codecs import TERMINATOR, Alphabet, PlainStrCodec, StrCodec
from lsiorm.errors import DeclarationError, KeyEncodingError

# Literals that follow a field: the usual separators, characters around them, U+0000's
# neighbours, a letter (which most alphabets do not sort above) and non-ASCII text.
LITERALS = ["#", "#TASK#", "!", "-", "/x", ":", "|", "a", "\x01", " ", "é#", "~", "\x7f"]
# The characters values are drawn from: separators, their neighbours, letters, digits.
POOL = ['"', "#", "$", "!", "-", ".", "0", "9", ":", "a", "b", "z", "|", "~", "é", "\x02", " "]

values_text = st.text(st.sampled_from(POOL), max_size=4)
tails = st.text(st.sampled_from(["#", "\x00", "a", "é", "0"]), max_size=3)


def _template(codec: KeyCodec, literal: str) -> KeyTemplate:
    """``P{field}{literal}{rest}``: the field, then the literal (less what the field holds)."""
    after = literal[1:] if codec.holds_literal else literal
    rest = StrCodec(field_name="rest")
    segments: list[Any] = ["P", FieldSlot("v", "", codec)]
    if after:
        segments.append(after)
    segments.append(FieldSlot("rest", "", rest))
    return KeyTemplate("SK", "S", "P{v}" + literal + "{rest}", tuple(segments))


def order_problem(codec: KeyCodec, literal: str, pairs: Sequence[tuple[str, str]]) -> str | None:
    """Return what breaks key order, prefix-freedom or the round trip, or None."""
    tpl = _template(codec, literal)
    keys = []
    for value, tail in pairs:
        try:
            key = tpl.render({"v": value, "rest": tail})
        except KeyEncodingError as exc:
            return f"{value!r} refused: {exc}"
        if tpl.parse(key) != {"v": value, "rest": tail}:
            return f"{key!r} parses to {tpl.parse(key)!r}"
        keys.append((key, value, tail))
    for ka, a, ta in keys:
        for kb, b, tb in keys:
            if (ka < kb) != ((a, ta) < (b, tb)):
                return f"{ka!r} vs {kb!r} sorts unlike {(a, ta)!r} vs {(b, tb)!r}"
            if (ka.encode() < kb.encode()) != ((a, ta) < (b, tb)):
                return f"UTF-8 of {ka!r} vs {kb!r}"
            head_a = codec.encode(a) + (literal[1:] if codec.holds_literal else literal)
            head_b = codec.encode(b) + (literal[1:] if codec.holds_literal else literal)
            if a != b and head_b.startswith(head_a):
                return f"{head_a!r} is a prefix of {head_b!r}"
    return None


# -- closed sets ---------------------------------------------------------------------------------


def closed_set_codec(values: Sequence[str], literal: str) -> KeyCodec:
    return text_codec(field_name="v", style="readable", following=literal, members=values)


closed_sets = st.lists(values_text, min_size=1, max_size=6, unique=True)


@given(closed_sets, st.sampled_from(LITERALS), st.data())
def test_closed_sets_keep_key_order(values: list[str], literal: str, data: Any) -> None:
    codec = closed_set_codec(values, literal)
    pairs = data.draw(st.lists(st.tuples(st.sampled_from(values), tails), max_size=8))
    assert order_problem(codec, literal, pairs) is None
    plain = closed_set_refusal(values, literal[0]) is None
    assert isinstance(codec, PlainStrCodec) == plain
    if plain:
        assert all(TERMINATOR not in codec.encode(v) for v in values)


@given(closed_sets, st.sampled_from(LITERALS), st.data())
def test_closed_sets_under_the_plain_style_keep_order_where_proved(
    values: list[str], literal: str, data: Any
) -> None:
    codec = text_codec(field_name="v", style="plain", following=literal, members=values)
    pairs = data.draw(st.lists(st.tuples(st.sampled_from(values), tails), max_size=8))
    if codec.ordered and codec.prefix_free:
        assert order_problem(codec, literal, pairs) is None


# -- alphabets: declared, and read from anchored patterns ----------------------------------------


@st.composite
def alphabets(draw: st.DrawFn) -> str:
    chars = draw(st.lists(st.sampled_from(POOL), min_size=1, max_size=6, unique=True))
    return "".join("\\" + c if c in "\\-]^" else c for c in chars)


@given(alphabets(), st.sampled_from(LITERALS), st.data())
def test_declared_alphabets_keep_key_order(spec: str, literal: str, data: Any) -> None:
    chars = alphabet_chars(spec, where="test")
    alphabet = Alphabet(chars, f"its alphabet {spec!r}", declared=True)
    codec = text_codec(field_name="v", style="readable", following=literal, alphabet=alphabet)
    allowed = [chr(c) for lo, hi in chars for c in range(lo, hi + 1)]
    text = st.text(st.sampled_from(allowed), max_size=4)
    pairs = data.draw(st.lists(st.tuples(text, tails), max_size=8))
    assert order_problem(codec, literal, pairs) is None
    assert isinstance(codec, PlainStrCodec) == (alphabet_refusal(alphabet, literal[0]) is None)


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(alphabets(), st.sampled_from(["+", "*"]), st.sampled_from(LITERALS), st.data())
def test_pattern_alphabets_keep_key_order(body: str, repeat: str, literal: str, data: Any) -> None:
    pattern = f"^[{body}]{repeat}$"
    chars = pattern_alphabet(pattern, python_semantics=False)
    assert chars is not None
    alphabet = Alphabet(chars, f"its pattern {pattern!r}", declared=False)
    codec = text_codec(field_name="v", style="readable", following=literal, alphabet=alphabet)
    text = st.from_regex(pattern, fullmatch=True).filter(lambda t: "\n" not in t)
    pairs = data.draw(st.lists(st.tuples(text, tails), max_size=6))
    assert order_problem(codec, literal, pairs) is None


def _alphabet_codec(values: list[str], literal: str) -> KeyCodec:
    """A readable codec over the alphabet of exactly the characters ``values`` hold."""
    spec = "".join("\\" + c if c in "\\-]^" else c for c in sorted(set("".join(values))))
    chars = alphabet_chars(spec or "a", where="test")
    alphabet = Alphabet(chars, "its alphabet", declared=True)
    return text_codec(field_name="v", style="readable", following=literal, alphabet=alphabet)


def _fails_with(make: Callable[[list[str], str], KeyCodec]) -> Callable[[Any], bool]:
    def fails(case: Any) -> bool:
        values, literal, chosen = case
        picked = [(values[i % len(values)], tail) for i, tail in chosen]
        return order_problem(make(values, literal), literal, picked) is not None

    return fails


_cases = st.tuples(
    closed_sets,
    st.sampled_from(LITERALS),
    st.lists(st.tuples(st.integers(0, 5), tails), min_size=2, max_size=4),
)


@pytest.mark.parametrize("make", [closed_set_codec, _alphabet_codec], ids=["closed", "alphabet"])
def test_the_properties_catch_a_broken_proof(
    monkeypatch: pytest.MonkeyPatch, make: Callable[[list[str], str], KeyCodec]
) -> None:
    # Loosen the rule so that it proves everything: characters equal to L[0], or below it.
    monkeypatch.setattr(key_styles, "alphabet_refusal", lambda alphabet, lead: None)
    monkeypatch.setattr(key_styles, "closed_set_refusal", lambda values, lead: None)
    values, literal, _ = find(_cases, _fails_with(make), settings=settings(max_examples=5000))
    # The shrunk counterexample is one the real rule refuses.
    if make is closed_set_codec:
        assert closed_set_refusal(values, literal[0]) is not None
    else:
        alphabet = Alphabet(alphabet_chars("".join(values) or "a", where="t"), "it", declared=True)
        assert alphabet_refusal(alphabet, literal[0]) is not None


@pytest.mark.parametrize("make", [closed_set_codec, _alphabet_codec], ids=["closed", "alphabet"])
def test_unbroken_proofs_find_no_counterexample(
    make: Callable[[list[str], str], KeyCodec],
) -> None:
    with pytest.raises(NoSuchExample):
        find(_cases, _fails_with(make), settings=settings(max_examples=500))


# -- the proof decisions, by example ---------------------------------------------------------


def test_closed_set_decisions() -> None:
    decisions = {
        (("red", "green", "blue"), "#"): None,
        (("aa", "bb"), "#"): None,
        (("a", "ab"), "#"): None,  # 'b' sorts above '#'
        (("a", "a!"), "#"): "its value 'a' is a prefix of 'a!', whose next character '!' "
        "does not sort above '#'",
        (("a", "a#"), "#"): "its value 'a#' holds '#'",
        (("a", "a\x00"), "!"): "its value 'a\\x00' holds U+0000",
        (("x\x01",), "!"): "its value 'x\\x01' holds U+0001",
        (("", "a"), "#"): None,  # the empty value is a prefix of every other
        (("", "!"), "#"): "its value '' is a prefix of '!', whose next character '!' does not "
        "sort above '#'",
        (("ab", "abc", "a"), "b"): "its value 'ab' holds 'b'",
        (("a", "ac"), "b"): None,
        (("a", "aa"), "b"): "its value 'a' is a prefix of 'aa', whose next character 'a' does "
        "not sort above 'b'",
    }
    got = {(values, lead): closed_set_refusal(values, lead) for values, lead in decisions}
    assert got == decisions


def test_alphabet_decisions() -> None:
    def refusal(spec: str, lead: str) -> str | None:
        return alphabet_refusal(
            Alphabet(alphabet_chars(spec, where="t"), "it", declared=True), lead
        )

    assert {
        ("a-z0-9-", "#"): refusal("a-z0-9-", "#"),
        ("a-z0-9-", "-"): refusal("a-z0-9-", "-"),
        ("a-z", "Z"): refusal("a-z", "Z"),
        ("a-z", "a"): refusal("a-z", "a"),
        ("^a", "#"): refusal("^a", "#"),
    } == {
        ("a-z0-9-", "#"): None,
        ("a-z0-9-", "-"): "it allows '-', which does not sort above '-'",
        ("a-z", "Z"): None,
        ("a-z", "a"): "it allows 'a', which does not sort above 'a'",
        ("^a", "#"): "it allows U+0000, which does not sort above '#'",
    }


def _ranges(pattern: str, *, python: bool = False) -> CharSet | None:
    return pattern_alphabet(pattern, python_semantics=python)


def test_pattern_alphabets_by_example() -> None:
    lower_digits_dash = ((0x2D, 0x2D), (0x30, 0x39), (0x61, 0x7A))
    assert {
        "slug": _ranges(r"^[a-z0-9-]+$"),
        "slug, python $": _ranges(r"^[a-z0-9-]+$", python=True),
        "\\A \\Z": _ranges(r"\A[a-z0-9-]*\Z", python=True),
        "unanchored": _ranges(r"[a-z]+$"),
        "start only": _ranges(r"^[a-z]+"),
        "end only": _ranges(r"[a-z]+\Z"),
        "branches": _ranges(r"^(?:ab|cd)+-[0-9]{2}$"),
        "negated": _ranges(r"^[^#]$"),
        "dot": _ranges(r"^.$"),
        "dotall": _ranges(r"(?s)^.$"),
        "category": _ranges(r"^\d+$"),
        "lookahead": _ranges(r"^(?=a)[a-z]+$"),
        "backreference": _ranges(r"^(a)\1$"),
        "ignorecase": _ranges(r"(?i)^[a-z]+$"),
        "multiline": _ranges(r"(?m)^[a-z]+$"),
        "inner anchor": _ranges(r"^a$|^b$"),
        "bad": _ranges(r"^[a-$"),
        "escaped dash": _ranges(r"^[a\-z]+$"),
    } == {
        "slug": lower_digits_dash,
        "slug, python $": ((0x0A, 0x0A), *lower_digits_dash),
        "\\A \\Z": lower_digits_dash,
        "unanchored": None,
        "start only": None,
        "end only": None,
        "branches": ((0x2D, 0x2D), (0x30, 0x39), (0x61, 0x64)),
        "negated": ((0, 0x22), (0x24, 0x10FFFF)),
        "dot": ((0, 0x09), (0x0B, 0x10FFFF)),
        "dotall": ((0, 0x10FFFF),),
        "category": None,
        "lookahead": None,
        "backreference": None,
        "ignorecase": None,
        "multiline": None,
        "inner anchor": None,
        "bad": None,
        "escaped dash": ((0x2D, 0x2D), (0x61, 0x61), (0x7A, 0x7A)),
    }


def test_declared_alphabets_are_classes() -> None:
    assert alphabet_chars("a-z0-9-", where="t") == ((0x2D, 0x2D), (0x30, 0x39), (0x61, 0x7A))
    assert alphabet_chars("x", where="t") == ((0x78, 0x78),)
    for bad in ("", "z-a", "[", "a]b"):
        with pytest.raises(DeclarationError) as refused:
            alphabet_chars(bad, where="Field 'f'")
        assert refused.value.rule == "template.alphabet"


def test_codecs_refuse_values_their_proof_excludes() -> None:
    members = closed_set_codec(["aa", "bb"], "#")
    assert members.encode("aa") == "aa#"
    with pytest.raises(KeyEncodingError) as refused:
        members.encode("cc")
    assert refused.value.rule == "key.literal-value"
    chars = alphabet_chars("a-z", where="t")
    alpha = text_codec(
        field_name="v",
        style="readable",
        following="#",
        alphabet=Alphabet(chars, "its alphabet 'a-z'", declared=True),
    )
    assert alpha.encode("web") == "web#"
    for outside in ("We", "a#", "a b", "é"):
        with pytest.raises(KeyEncodingError) as refused:
            alpha.encode(outside)
        assert refused.value.rule == "key.outside-alphabet"
        assert "its alphabet 'a-z'" in str(refused.value)


def test_begins_with_a_prefix_no_value_can_start_with() -> None:
    members = closed_set_codec(["red", "reddish", "blue"], "#")
    assert [members.admits_prefix(p) for p in ("", "re", "red", "redd", "red#", "x")] == [
        True,
        True,
        True,
        True,
        False,
        False,
    ]
    escaped = StrCodec(terminated=True)
    assert escaped.admits_prefix("a#\x00")

"""Hypothesis strategies for the values DynamoDB stores, and texts at the edges of key order."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import strategies as st

MAX_COEFFICIENT = 10**38 - 1
coefficients = st.integers(min_value=-MAX_COEFFICIENT, max_value=MAX_COEFFICIENT)
# Any coefficient of at most 38 digits times 10**e with e in [-130, 88] is in DynamoDB's range.
in_range_ints = coefficients | st.builds(
    lambda c, e: c * 10**e, coefficients, st.integers(min_value=0, max_value=88)
)
in_range_decimals = st.builds(
    lambda c, e: Decimal(f"{c}E{e}"), coefficients, st.integers(min_value=-130, max_value=88)
)
numbers = in_range_ints | in_range_decimals
texts = st.text(max_size=12)
scalars = st.none() | st.booleans() | texts | numbers | st.binary(max_size=12)
sets = (
    st.sets(texts, min_size=1, max_size=5)
    | st.sets(numbers, min_size=1, max_size=5)
    | st.sets(st.binary(max_size=8), min_size=1, max_size=5)
)
values = st.recursive(
    scalars | sets,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(texts, children, max_size=4),
    max_leaves=20,
)
items = st.dictionaries(st.text(min_size=1, max_size=8), values, max_size=6)


def in_dynamo_range(f: float) -> bool:
    if f == 0:
        return True
    return Decimal("1E-130") <= abs(Decimal(repr(f))) < Decimal("1E+126")


finite_floats = st.floats(allow_nan=False, allow_infinity=False)


#: The lowest texts a key can hold, in order: the empty string, the terminator U+0000, the escape
#: U+0001 and its neighbour U+0002, then space and "!", the lowest printable characters.
LOWEST_CHARS = ["", "\x00", "\x01", "\x02", " ", "!"]

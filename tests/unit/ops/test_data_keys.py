"""A session's data-key cache: no key encrypts past its age or its uses, and no more unwrapped
keys are kept than the bound, whatever the sequence of calls and the passing of time."""

from __future__ import annotations

import os

from hypothesis import given
from hypothesis import strategies as st

from lsiorm._model.sealing import DataKey
from lsiorm._ops.data_keys import DataKeyCache


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _key(n: int) -> DataKey:
    return DataKey(os.urandom(32), f"arn:aws:kms:us-east-1:111122223333:key/{n}", os.urandom(8))


STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("seal"), st.sampled_from(["A", "B"])),
        st.tuples(st.just("wait"), st.floats(min_value=0, max_value=40)),
        st.tuples(st.just("open"), st.integers(min_value=0, max_value=30)),
    ),
    max_size=80,
)


@given(
    steps=STEPS,
    max_age=st.floats(min_value=1, max_value=60),
    max_uses=st.integers(min_value=1, max_value=5),
    max_keys=st.integers(min_value=1, max_value=4),
)
def test_keys_are_bounded_by_age_uses_and_count(
    steps: list[tuple[str, object]], max_age: float, max_uses: int, max_keys: int
) -> None:
    clock = Clock()
    cache = DataKeyCache(max_age, max_uses, max_keys, clock)
    made: list[DataKey] = []
    born: dict[bytes, float] = {}
    uses: dict[bytes, int] = {}
    for kind, arg in steps:
        if kind == "wait":
            assert isinstance(arg, float)
            clock.now += arg
        elif kind == "seal":
            assert isinstance(arg, str)
            key = cache.take(arg)
            if key is None:  # as the request path does: generate one, its first use counted
                key = _key(len(made))
                made.append(key)
                born[key.wrapped] = clock.now
                cache.put(arg, key)
            uses[key.wrapped] = uses.get(key.wrapped, 0) + 1
            assert uses[key.wrapped] <= max_uses
            assert clock.now - born[key.wrapped] < max_age or uses[key.wrapped] == 1
        else:
            assert isinstance(arg, int)
            if arg < len(made):
                key = made[arg]
                for table in ("A", "B"):
                    found = cache.unwrapped_key(key.wrapped, table)
                    assert found is None or found == key.plaintext
                    if found is not None:
                        assert clock.now - born[key.wrapped] < max_age
        assert len(cache._decrypting) <= max_keys  # the bound itself
    assert cache.generated == len(made)


def test_an_unwrapped_key_is_kept_for_its_age_and_the_oldest_goes_first() -> None:
    clock = Clock()
    cache = DataKeyCache(max_age=10, max_uses=100, max_keys=2, clock=clock)
    first, second, third = _key(1), _key(2), _key(3)
    cache.keep_unwrapped(first.wrapped, "T", first.plaintext)
    cache.keep_unwrapped(second.wrapped, "T", second.plaintext)
    assert cache.unwrapped_key(first.wrapped, "T") == first.plaintext  # now the newest used
    cache.keep_unwrapped(third.wrapped, "T", third.plaintext)
    assert cache.unwrapped_key(second.wrapped, "T") is None  # the least recently used went
    assert cache.unwrapped_key(first.wrapped, "Other") is None  # bound to its table
    clock.now = 10
    assert cache.unwrapped_key(first.wrapped, "T") is None
    assert "plaintext" not in repr(cache)
    assert first.plaintext.hex() not in repr(first)

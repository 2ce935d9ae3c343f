"""How many random cases a differential oracle runs on each engine.

moto answers these queries from Python, about seven to ten times slower than DynamoDB Local,
and DynamoDB Local is the reference where the two differ. So at the suite's own size
(``LSIORM_ORACLE_SCALE`` 1) moto runs a quarter of an oracle's cases and DynamoDB Local all of
them; a longer run (a larger scale) runs every case on both. ``LSIORM_ORACLE_MOTO_SHARE`` sets
moto's share.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Protocol, TypeVar

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

SCALE = float(os.environ.get("LSIORM_ORACLE_SCALE", "1"))
MOTO_SHARE = float(os.environ.get("LSIORM_ORACLE_MOTO_SHARE", "0.25" if SCALE <= 1 else "1"))


def examples_on(backend: str, examples: int) -> int:
    """The number of cases to run on ``backend`` for an oracle of ``examples`` cases."""
    return max(1, round(examples * MOTO_SHARE)) if backend == "moto" else examples


class Store(Protocol):
    """What an oracle's fixture gives: at least the name of the engine under test."""

    backend: str


S = TypeVar("S", bound=Store)


def run_oracle(
    check: Callable[[S, st.DataObject], None], store: S, examples: int, *, shrink: bool = True
) -> None:
    """Run ``check(store, data)`` on random ``data`` for `examples_on` cases of the store's
    engine, without a deadline (each case sends requests). ``shrink=False`` leaves a failing
    case unshrunk, for checks whose every replay sends many requests."""
    phases = tuple(Phase) if shrink else (Phase.explicit, Phase.reuse, Phase.generate)

    @settings(
        max_examples=examples_on(store.backend, examples),
        deadline=None,
        phases=phases,
        suppress_health_check=[HealthCheck.too_slow],
        # One inner function serves every oracle, so a failure saved by one would only be
        # replayed as a random case by the others: keep none.
        database=None,
    )
    @given(data=st.data())
    def oracle(data: st.DataObject) -> None:
        check(store, data)

    oracle()

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
from typing import Any, TypeVar

from hypothesis import given, settings
from hypothesis import strategies as st

T = TypeVar("T")

SCALE = float(os.environ.get("LSIORM_ORACLE_SCALE", "1"))
MOTO_SHARE = float(os.environ.get("LSIORM_ORACLE_MOTO_SHARE", "0.25" if SCALE <= 1 else "1"))


def examples_on(backend: str, examples: int) -> int:
    """The number of cases to run on ``backend`` for an oracle of ``examples`` cases."""
    return max(1, round(examples * MOTO_SHARE)) if backend == "moto" else examples


def run_oracle(
    check: Callable[[T, st.DataObject], None],
    store: T,
    backend: str,
    examples: int,
    **options: Any,
) -> None:
    """Run ``check(store, data)`` on random ``data`` for `examples_on` cases, with hypothesis
    ``settings(**options)``."""

    @settings(max_examples=examples_on(backend, examples), **options)
    @given(data=st.data())
    def oracle(data: st.DataObject) -> None:
        check(store, data)

    oracle()

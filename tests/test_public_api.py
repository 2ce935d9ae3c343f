"""The public surface: the names exported at the top level (sync/async parity: test_parity)."""

from __future__ import annotations

import lsiorm


def test_every_exported_name_exists_and_is_listed_once() -> None:
    assert len(lsiorm.__all__) == len(set(lsiorm.__all__))
    for name in lsiorm.__all__:
        assert hasattr(lsiorm, name), name
    assert sorted(lsiorm.__all__) == lsiorm.__all__

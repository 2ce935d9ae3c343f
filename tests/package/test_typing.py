"""What a type checker tells users about keywords lsiorm declares once (`UpdateChanges`).

A keyword set declared as a TypedDict (``**changes: Unpack[UpdateChanges]``) must keep what an
explicit signature gave: mypy flags a misspelled keyword, a keyword that is not there and a
value of the wrong type, and accepts the right ones; at run time an unknown keyword is a
TypeError.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mypy import api

from lsiorm import dry_run_update
from support.models import declare_nested_doc

#: A user's code: each line that mypy must flag ends with the start of the message it gives.
USER_CODE = """
from lsiorm import Entity, dry_run_update


def price(entity: Entity) -> None:
    dry_run_update(entity, set={"title": "x"}, remove=["tags"], transactional=True)
    dry_run_update(entity, if_not_exists={"views": 0}, prepend={"history": ["a"]})
    dry_run_update(entity, sett={"title": "x"})  # Unexpected keyword argument "sett"
    dry_run_update(entity, upsert=True)  # Unexpected keyword argument "upsert"
    dry_run_update(entity, add=3)  # Argument "add" to "dry_run_update" has incompatible type
"""


def test_mypy_still_flags_a_misspelled_update_keyword(tmp_path: Path) -> None:
    user = tmp_path / "user.py"
    user.write_text(USER_CODE)
    cache = tmp_path / "cache"
    out, err, status = api.run(
        ["--strict", "--no-error-summary", "--cache-dir", str(cache), str(user)]
    )
    found = {}
    for line in out.splitlines():
        _, number, kind, message = line.split(":", 3)
        if kind.strip() == "error":
            found[int(number)] = message.strip()
    expected = {
        number: line.split("# ", 1)[1]
        for number, line in enumerate(USER_CODE.splitlines(), start=1)
        if "# " in line
    }
    assert (status, err) == (1, "")
    assert sorted(found) == sorted(expected)
    for number, start in expected.items():
        assert found[number].startswith(start), found[number]


@pytest.mark.parametrize("keyword", ["sett", "upsert", "condition"])
def test_an_unknown_update_keyword_is_refused_at_run_time(keyword: str) -> None:
    _, doc = declare_nested_doc()
    with pytest.raises(TypeError, match=f"unexpected keyword argument '{keyword}'"):
        dry_run_update(doc(did="a", title="t"), **{keyword: {}})  # type: ignore[arg-type]

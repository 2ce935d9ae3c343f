"""The one page reader: a paged read sent page by page, each page handed on."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from lsiorm._ops.pages import read_all, read_page, read_pages
from lsiorm._ops.pipeline import Context
from lsiorm._ops.retry import RetryPolicy
from lsiorm._ops.steps import Call, Operation
from lsiorm._requests.pages import PagedRead, ReadPage
from lsiorm.errors import ThrottledError
from support.fakes import answering

QUICK = Context(RetryPolicy(max_attempts=3, initial=0.0, maximum=0.0))
READ = PagedRead("Scan", {"TableName": "Things"}, limit=2)


def _answers(pages: list[list[int]]) -> list[dict[str, Any]]:
    """DynamoDB's answers of these pages of numbers: each but the last says where it ends."""
    out = []
    for n, numbers in enumerate(pages):
        answer: dict[str, Any] = {"Items": [{"n": {"N": str(v)}} for v in numbers]}
        if n < len(pages) - 1:
            answer["LastEvaluatedKey"] = {"n": {"N": f"{n}"}}
        out.append(answer)
    return out


@given(st.lists(st.lists(st.integers(0, 99), max_size=3), min_size=1, max_size=5))
def test_every_page_is_read_once_in_order_from_where_the_last_ended(pages: list[list[int]]) -> None:
    seen: list[ReadPage] = []
    stopped, calls = answering(read_pages(QUICK, READ, seen.append), _answers(pages))
    assert stopped is None
    assert [[int(i["n"]["N"]) for i in page.items] for page in seen] == pages
    assert [c.params for c in calls] == [
        {
            "TableName": "Things",
            "Limit": 2,
            **({"ExclusiveStartKey": {"n": {"N": f"{n - 1}"}}} if n else {}),
        }
        for n in range(len(pages))
    ]
    assert [page.last for page in seen] == [n == len(pages) - 1 for n in range(len(pages))]


def test_a_read_with_a_page_cap_stops_there_and_says_where() -> None:
    read = PagedRead("Scan", {"TableName": "Things"}, pages=2, start={"n": {"N": "7"}})
    stopped, calls = answering(
        read_pages(QUICK, read, lambda page: None), _answers([[1], [2], [3]])
    )
    assert stopped == {"n": {"N": "1"}}
    assert calls[0].params["ExclusiveStartKey"] == {"n": {"N": "7"}}
    assert len(calls) == 2


def test_a_handler_that_is_an_operation_runs_before_the_next_page() -> None:
    order: list[str] = []

    def each(page: ReadPage) -> Operation[None]:
        order.append(f"page {len(page.items)}")
        yield Call("PutItem", {"TableName": "Log"})
        order.append("logged")

    answers = _answers([[1, 2], [3]])
    _, calls = answering(read_pages(QUICK, READ, each), [answers[0], {}, answers[1], {}])
    assert [c.operation for c in calls] == ["Scan", "PutItem", "Scan", "PutItem"]
    assert order == ["page 2", "logged", "page 1", "logged"]


def test_a_page_is_retried_through_the_pipeline() -> None:
    throttled = ThrottledError("slow down", code="ThrottlingException")
    page, calls = answering(
        read_page(QUICK, READ, {"n": {"N": "3"}}), [throttled, *_answers([[4]])]
    )
    assert len(calls) == 2
    assert calls[0].params == calls[1].params
    assert page.items == [{"n": {"N": "4"}}]
    assert page.request == calls[1].params


def test_read_all_returns_every_item() -> None:
    items, _ = answering(read_all(QUICK, READ), _answers([[1], [], [2, 3]]))
    assert [int(i["n"]["N"]) for i in items] == [1, 2, 3]

"""The app's own tests of what happens when DynamoDB misbehaves, with lsiorm's fault fixtures."""

import pytest
from notes_app.store import (
    Attachment,
    Note,
    Owner,
    attach,
    attachments,
    count_note,
    create_note,
    import_notes,
    notes_of,
    publish,
)

from lsiorm.errors import (
    BatchWriteIncompleteError,
    ItemCollectionSizeLimitError,
    OutcomeUnknownError,
    TransactionCanceledError,
)


def test_a_throttled_note_is_still_created(lsiorm_session, lsiorm_faults):
    lsiorm_faults.throttle("PutItem", times=2)
    create_note(lsiorm_session, Note(owner="ann", nid="1", text="hi"))
    assert lsiorm_faults.count("PutItem") == 3


def test_a_note_whose_answer_was_lost_is_created_once(lsiorm_session, lsiorm_faults):
    lsiorm_faults.lose_answer("PutItem")
    created = create_note(lsiorm_session, Note(owner="ann", nid="2", text="hi"))
    assert lsiorm_faults.count("PutItem", fault="lost-answer") == 1
    assert notes_of(lsiorm_session, "ann") == [created]


def test_a_lost_counter_update_is_reported_not_repeated(lsiorm_session, lsiorm_faults):
    count_note(lsiorm_session, "bob")
    lsiorm_faults.lose_answer("UpdateItem")
    with pytest.raises(OutcomeUnknownError):
        count_note(lsiorm_session, "bob")
    owner = lsiorm_session.get(Owner, owner="bob", consistent=True)
    assert owner.notes == 2  # applied once, never twice


def test_an_import_survives_throttling_and_partial_batches(lsiorm_session, lsiorm_faults):
    lsiorm_faults.throttle("BatchWriteItem", times=2)
    lsiorm_faults.partial("BatchWriteItem", times=3)
    batch = [Note(owner="cy", nid=f"{n:02d}", text="x") for n in range(40)]
    assert import_notes(lsiorm_session, batch) == 40
    assert len(notes_of(lsiorm_session, "cy")) == 40


def test_an_import_that_keeps_failing_says_what_was_not_written(lsiorm_session, lsiorm_faults):
    lsiorm_faults.throttle("BatchWriteItem", times=None)  # every attempt, without end
    with pytest.raises(BatchWriteIncompleteError) as failed:
        import_notes(lsiorm_session, [Note(owner="dee", nid="1", text="x")])
    assert [n.nid for n in failed.value.unprocessed] == ["1"]


def test_unavailable_on_a_third_of_requests_loses_nothing(lsiorm_session, lsiorm_faults):
    lsiorm_faults.server_error(status=503, rate=0.3, seed=7)
    for n in range(10):
        create_note(lsiorm_session, Note(owner="eve", nid=str(n), text="x"))
    assert len(notes_of(lsiorm_session, "eve")) == 10
    assert lsiorm_faults.count(fault="error503") > 0


def test_a_cancelled_publication_stores_nothing(lsiorm_session, lsiorm_faults):
    lsiorm_session.put(Owner(owner="fay"))
    lsiorm_faults.cancel_transaction("ConditionalCheckFailed")
    with pytest.raises(TransactionCanceledError) as cancelled:
        publish(lsiorm_session, Note(owner="fay", nid="1", text="x"))
    assert [r.code for r in cancelled.value.reasons] == ["ConditionalCheckFailed", "None"]
    assert notes_of(lsiorm_session, "fay") == []


def test_listing_notes_is_one_query(lsiorm_session, lsiorm_faults):
    notes_of(lsiorm_session, "gus")
    assert lsiorm_faults.operations == ["Query"]


def test_a_note_cannot_hold_more_than_ten_gb_of_attachments(lsiorm_collection_session):
    # Through the collection proxy, a "GB" is 100,000 bytes: 10 GB is one megabyte.
    stored = []

    def attach_until_refused():
        while len(stored) < 100:
            pdf = Attachment(nid="1", name=str(len(stored)), kind="pdf", data="x" * 50_000)
            stored.append(attach(lsiorm_collection_session, pdf))

    with pytest.raises(ItemCollectionSizeLimitError):
        attach_until_refused()
    assert 5 <= len(stored) < 100
    estimate = lsiorm_collection_session.collections.estimate(attachments, "NOTE#1")
    assert estimate.high_gb >= 8  # the watcher warned before the limit

"""Single-item requests built without I/O: exact put params with their conditions."""

from __future__ import annotations

from lsiorm import gt, where
from lsiorm._requests.items import put_request
from support.models import declare_ranked_thread, ranked_forum_table


def test_put_request_create_only_dict() -> None:
    table = ranked_forum_table("PureTable")
    Thread, _ = declare_ranked_thread(table)
    t = Thread(forum="S3", subject="a", replies=2)
    params, stored = put_request(t, create_only=True, condition=where(replies=gt(1)))
    assert stored is t
    assert params == {
        "TableName": "PureTable",
        "Item": {
            "ForumName": {"S": "S3"},
            "Subject": {"S": "T#a"},
            "_type": {"S": "Thread"},
            "forum": {"S": "S3"},
            "subject": {"S": "a"},
            "Replies": {"N": "2"},
            "tags": {"L": []},
        },
        "ConditionExpression": "(attribute_not_exists(#n0)) AND (#n1 > :v0)",
        "ExpressionAttributeNames": {"#n0": "ForumName", "#n1": "Replies"},
        "ExpressionAttributeValues": {":v0": {"N": "1"}},
    }

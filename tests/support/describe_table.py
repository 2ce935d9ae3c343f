"""DescribeTable responses shaped from declared tables, for drift checks without an engine."""

from __future__ import annotations

import copy
from typing import Any

from lsiorm import Table

__all__ = ["describe", "live_of"]


def describe(request: dict[str, Any], *, summary: bool | None = None) -> dict[str, Any]:
    """Shape a CreateTable request like the DescribeTable response DynamoDB gives for it.

    ``summary`` None includes BillingModeSummary only for PAY_PER_REQUEST, as DynamoDB does for a
    table that has never switched billing mode.
    """
    provisioned = request["BillingMode"] == "PROVISIONED"
    arn = f"arn:aws:dynamodb:us-east-1:123456789012:table/{request['TableName']}"
    zero = {"NumberOfDecreasesToday": 0, "ReadCapacityUnits": 0, "WriteCapacityUnits": 0}
    table: dict[str, Any] = {
        "TableName": request["TableName"],
        "TableArn": arn,
        "TableStatus": "ACTIVE",
        "KeySchema": copy.deepcopy(request["KeySchema"]),
        "AttributeDefinitions": copy.deepcopy(request["AttributeDefinitions"]),
        "ItemCount": 0,
        "TableSizeBytes": 0,
        "ProvisionedThroughput": {**zero, **request.get("ProvisionedThroughput", {})},
    }
    if summary or (summary is None and not provisioned):
        table["BillingModeSummary"] = {"BillingMode": request["BillingMode"]}
    if "LocalSecondaryIndexes" in request:
        table["LocalSecondaryIndexes"] = [
            {
                "IndexName": lsi["IndexName"],
                "KeySchema": copy.deepcopy(lsi["KeySchema"]),
                "Projection": copy.deepcopy(lsi["Projection"]),
                "IndexSizeBytes": 0,
                "ItemCount": 0,
                "IndexArn": f"{arn}/index/{lsi['IndexName']}",
            }
            for lsi in request["LocalSecondaryIndexes"]
        ]
    if "GlobalSecondaryIndexes" in request:
        table["GlobalSecondaryIndexes"] = [
            {
                "IndexName": gsi["IndexName"],
                "KeySchema": copy.deepcopy(gsi["KeySchema"]),
                "Projection": copy.deepcopy(gsi["Projection"]),
                "IndexStatus": "ACTIVE",
                "ProvisionedThroughput": {**zero, **gsi.get("ProvisionedThroughput", {})},
                "IndexSizeBytes": 0,
                "ItemCount": 0,
                "IndexArn": f"{arn}/index/{gsi['IndexName']}",
            }
            for gsi in request["GlobalSecondaryIndexes"]
        ]
    return {"Table": table}


def live_of(table: Table, **changes: Any) -> dict[str, Any]:
    """The ``Table`` of the DescribeTable response for ``table`` as declared, with ``changes``
    (top-level attributes of the description) put over it."""
    live: dict[str, Any] = describe(table.create_table_request())["Table"]
    live.update(changes)
    return live

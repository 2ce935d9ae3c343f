"""The order as a pydynox model, in a module of its own that does not import lsiorm.

The cold-start workload imports it into a fresh interpreter, as an application's model module.
"""

from __future__ import annotations

from typing import Any

PYDYNOX_TABLE = "bench_pydynox"


def pydynox_model(host: str) -> Any:
    """Return a pydynox model class of the order, bound to the engine at ``host``."""
    from pydynox import DynamoDBClient, Model, ModelConfig
    from pydynox.attributes import (
        DatetimeAttribute,
        DecimalAttribute,
        ListAttribute,
        NumberAttribute,
        StringAttribute,
    )

    client = DynamoDBClient(endpoint_url=host, region="us-east-1")

    class PydynoxOrder(Model):
        model_config = ModelConfig(table=PYDYNOX_TABLE, client=client)

        pk = StringAttribute(partition_key=True)
        sk = StringAttribute(sort_key=True)
        lsi1 = StringAttribute()
        type_name = StringAttribute(alias="_type")
        customer = StringAttribute()
        order_no = NumberAttribute()
        status = StringAttribute()
        total = DecimalAttribute()
        created = DatetimeAttribute()
        tags = ListAttribute()
        note = StringAttribute()

    return PydynoxOrder

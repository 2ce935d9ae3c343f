"""Keyrings on local KMS and S3, for tests of protected fields (moto's, in process or served).

`local_keyring` creates what a `Keyring` names (a KMS key and an S3 bucket) on an endpoint
that serves KMS and S3, such as lsiorm's `MotoServer` (``lsiorm_endpoints("moto")``), or on
moto's in-process mock when ``endpoint_url`` is None inside ``moto.mock_aws()``; the pytest
plugin's ``lsiorm_keyring`` fixture is one on the moto server. A keyring of your own (your KMS
key, your bucket) works unchanged: nothing here is needed outside tests.
"""

from __future__ import annotations

import os
import uuid
from typing import Any

from lsiorm._model.keyring import Keyring
from lsiorm.testing.endpoints import local_credentials

__all__ = ["local_keyring"]


def local_keyring(
    endpoint_url: str | None = None, *, region_name: str = "us-east-1", **options: Any
) -> Keyring:
    """A keyring whose KMS key and S3 bucket were just created on ``endpoint_url``.

    The key is a symmetric KMS key, the bucket is named ``lsiorm-test-<random>``, the beacon
    key is 32 random bytes. ``options`` are the other `Keyring` fields (``mode``,
    ``grace_seconds``, ``max_uses``, ...).
    """
    import boto3

    kwargs: dict[str, Any] = {"region_name": region_name}
    if endpoint_url is not None:
        kwargs |= {"endpoint_url": endpoint_url, **local_credentials(endpoint_url)}
    kms = boto3.client("kms", **kwargs)
    s3 = boto3.client("s3", **kwargs)
    key_id = kms.create_key(Description="lsiorm test key")["KeyMetadata"]["Arn"]
    bucket = f"lsiorm-test-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)
    settings: dict[str, Any] = {
        "kms_key_id": key_id,
        "beacon_key": os.urandom(32),
        "bucket": bucket,
        "kms_endpoint_url": endpoint_url,
        "s3_endpoint_url": endpoint_url,
        "region_name": region_name,
    }
    settings.update(options)
    return Keyring(**settings)

"""The server's credential settings and the session policy it scopes minted credentials with
(mor/server/credentials.py). That the policy holds against a server checking IAM is
tests/server/test_serve_s3.py's concern."""

from __future__ import annotations

import pytest

from mor.errors import InvalidArgumentError
from mor.server.credentials import CredentialVendor, MintingSettings, session_policy

ROLE = "arn:aws:iam::123456789012:role/mor-tables"
SERVER = {"s3.endpoint": "http://127.0.0.1:9000", "s3.access-key-id": "admin", "s3.secret-access-key": "secret", "s3.region": "eu-west-1"}


def test_without_a_role_the_server_passes_its_own_settings_on() -> None:
    vendor = CredentialVendor({**SERVER, "warehouse": "s3://b/wh"})
    assert vendor.minting is None
    assert vendor.config("s3://b/wh/db.db/t") == SERVER
    assert vendor.storage_credentials("s3://b/wh/db.db/t") == [{"prefix": "s3://b/wh/db.db/t", "config": SERVER}]
    assert CredentialVendor({}).storage_credentials("s3://b/t") == []  # nothing to hand out


def test_minting_settings_are_checked_naming_the_property() -> None:
    settings = MintingSettings.of({**SERVER, "server.vend.s3.role-arn": ROLE})
    assert settings is not None
    assert (settings.duration_seconds, settings.sts_endpoint, settings.partition) == (3600, "http://127.0.0.1:9000", "aws")
    cases = {
        "server.vend.s3.role-arn": ({"server.vend.s3.role-arn": "mor-tables"}, "IAM role ARN"),
        "server.vend.duration-seconds": ({"server.vend.s3.role-arn": ROLE, "server.vend.duration-seconds": "60"}, "900 to 43200"),
    }
    for name, (properties, words) in cases.items():
        with pytest.raises(InvalidArgumentError, match=f"{name}.*{words}"):
            MintingSettings.of(properties)
    with pytest.raises(InvalidArgumentError, match="without server.vend.s3.role-arn"):
        MintingSettings.of({"server.vend.duration-seconds": "900"})


def test_a_minting_server_never_hands_out_its_own_keys_for_other_stores() -> None:
    vendor = CredentialVendor({**SERVER, "server.vend.s3.role-arn": ROLE})
    assert vendor.config("gs://bucket/t") == {"s3.endpoint": "http://127.0.0.1:9000", "s3.region": "eu-west-1"}


def test_the_session_policy_allows_the_tables_prefix_only() -> None:
    policy = session_policy("s3://bucket/wh/db.db/t", "aws-cn")
    objects, listing, location = policy["Statement"]
    assert objects["Resource"] == "arn:aws-cn:s3:::bucket/wh/db.db/t/*"
    assert "s3:GetObject" in objects["Action"] and "s3:PutObject" in objects["Action"] and "s3:DeleteObject" in objects["Action"]
    assert listing["Resource"] == "arn:aws-cn:s3:::bucket"
    assert listing["Condition"] == {"StringLike": {"s3:prefix": ["wh/db.db/t/*", "wh/db.db/t"]}}
    assert location["Action"] == "s3:GetBucketLocation"
    whole_bucket = session_policy("s3://bucket")
    assert whole_bucket["Statement"][0]["Resource"] == "arn:aws:s3:::bucket/*" and "Condition" not in whole_bucket["Statement"][1]

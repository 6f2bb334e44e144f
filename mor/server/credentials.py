"""The storage credentials the server hands a client with a table: on load when the client
asks (`X-Iceberg-Access-Delegation: vended-credentials`), and on the table's `credentials`
endpoint, as the spec's `storage-credentials` (by the prefix they apply to).

Two ways, by the server's own properties:
- By default the server passes on its own S3 settings (`s3.*`, `client.region`): long-lived,
  and good for every table it serves.
- With `server.vend.s3.role-arn` it mints credentials per table instead: it assumes that role
  through STS with a session policy that allows only the table's own prefix (objects under
  `<location>/`, and listing under it), for `server.vend.duration-seconds` (900 to 43200,
  default 3600). A client then holds a key that reaches one table and expires, never the
  server's. The session token's expiry goes with it (`s3.session-token-expires-at-ms`, the key
  Iceberg Java refreshes by), and credentials are reused for a table while more than half
  their life is left, so a busy table costs STS one call per half-life, not one per load.
  STS is reached at `server.vend.s3.sts-endpoint`, else at `s3.endpoint` (S3-compatible
  servers serve STS there), else AWS's own, with the server's S3 credentials.

A read-only token (auth.py) is vended nothing that writes (`CredentialVendor.read_only()`):
minted credentials get a session policy that only reads and lists; the server's own keys,
which write, are not passed on at all (the other settings are, so the client reaches the
store with credentials of its own).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mor.errors import CatalogUnavailableError, InvalidArgumentError, UnsupportedFeatureError
from mor.io.stores import first_setting

# The server's settings a client may see: what reaches the store, minus the server's secrets
# when it mints its own.
PASSED_ON_PREFIXES = ("s3.", "client.region")
SECRET_KEYS = ("s3.access-key-id", "s3.secret-access-key", "s3.session-token")
ROLE_ARN, DURATION, EXTERNAL_ID, STS_ENDPOINT = (
    "server.vend.s3.role-arn", "server.vend.duration-seconds", "server.vend.s3.external-id", "server.vend.s3.sts-endpoint",
)  # fmt: skip
EXPIRES_AT = "s3.session-token-expires-at-ms"
_ROLE = re.compile(r"arn:(aws[a-z-]*):iam::\d{12}:role/[\w+=,.@/-]+")
_STS_DURATIONS = (900, 43200)  # what AssumeRole accepts
READ_ACTIONS = ["s3:GetObject"]
WRITE_ACTIONS = ["s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"]


@dataclass(frozen=True)
class MintingSettings:
    role_arn: str
    duration_seconds: int
    external_id: str | None
    sts_endpoint: str | None

    @property
    def partition(self) -> str:
        return self.role_arn.split(":")[1]

    @classmethod
    def of(cls, properties: Mapping[str, str]) -> MintingSettings | None:
        """The settings of minting, None when the server passes on its own; InvalidArgumentError
        naming the property when one is wrong (checked when the server starts)."""
        role = first_setting(properties, ROLE_ARN)
        if role is None:
            stray = [k for k in (DURATION, EXTERNAL_ID, STS_ENDPOINT) if k in properties]
            if stray:
                raise InvalidArgumentError(f"{', '.join(stray)} without {ROLE_ARN}: minting needs a role to assume")
            return None
        if not _ROLE.fullmatch(role):
            raise InvalidArgumentError(f"{ROLE_ARN} is an IAM role ARN (arn:aws:iam::123456789012:role/NAME), got {role!r}")
        raw = properties.get(DURATION, "3600")
        try:
            duration = int(raw)
        except ValueError:
            duration = -1
        low, high = _STS_DURATIONS
        if not low <= duration <= high:
            raise InvalidArgumentError(f"{DURATION} is a whole number of seconds from {low} to {high}, got {raw!r}")
        endpoint = first_setting(properties, STS_ENDPOINT) or first_setting(properties, "s3.endpoint")
        return cls(role, duration, first_setting(properties, EXTERNAL_ID), endpoint)


class CredentialVendor:
    """The storage credentials of each table, by the server's properties (module docstring)."""

    def __init__(self, properties: Mapping[str, str], writes: bool = True):
        self.properties = dict(properties)
        self.writes = writes  # False: vend only what reads (module docstring)
        self.minting = MintingSettings.of(self.properties)  # InvalidArgumentError before serving
        self._minted: dict[str, tuple[dict[str, str], float]] = {}  # prefix -> (config, time to mint anew)
        self._lock = threading.Lock()
        self._sts: Any = None

    def read_only(self) -> CredentialVendor:
        """A vendor of the same settings whose credentials only read."""
        return CredentialVendor(self.properties, writes=False)

    def storage_credentials(self, table_location: str) -> list[dict[str, Any]]:
        """The spec's `storage-credentials` of a table: [] when there is nothing to hand out."""
        config = self.config(table_location)
        return [{"prefix": table_location, "config": config}] if config and table_location else []

    def config(self, table_location: str) -> dict[str, str]:
        """The properties that reach the table's files (loadTable's `config`)."""
        passed_on = {k: v for k, v in self.properties.items() if k.startswith(PASSED_ON_PREFIXES)}
        if self.minting is None:
            return passed_on if self.writes else {k: v for k, v in passed_on.items() if k not in SECRET_KEYS}
        settings = {k: v for k, v in passed_on.items() if k not in SECRET_KEYS}  # the server's keys stay with it
        if not table_location.startswith(("s3://", "s3a://", "s3n://")):
            return settings
        return {**settings, **self._minted_for(table_location.rstrip("/"))}

    def _minted_for(self, prefix: str) -> dict[str, str]:
        with self._lock:
            cached = self._minted.get(prefix)
            if cached is not None and time.time() < cached[1]:
                return cached[0]
            config, expires_at = self._mint(prefix)
            lifetime = expires_at - time.time()
            self._minted[prefix] = (config, time.time() + lifetime / 2)
            return config

    def _mint(self, prefix: str) -> tuple[dict[str, str], float]:
        assert self.minting is not None
        request: dict[str, Any] = {
            "RoleArn": self.minting.role_arn,
            "RoleSessionName": "mor-serve",
            "DurationSeconds": self.minting.duration_seconds,
            "Policy": json.dumps(session_policy(prefix, self.minting.partition, self.writes)),
        }
        if self.minting.external_id is not None:
            request["ExternalId"] = self.minting.external_id
        try:
            answer = self._sts_client().assume_role(**request)["Credentials"]
        except Exception as e:  # botocore's errors: the store's service, not the client's request
            raise CatalogUnavailableError(f"could not mint credentials for {prefix}: STS refused or was unreachable: {e}") from None
        expires_at = answer["Expiration"].timestamp()
        return {
            "s3.access-key-id": answer["AccessKeyId"],
            "s3.secret-access-key": answer["SecretAccessKey"],
            "s3.session-token": answer["SessionToken"],
            EXPIRES_AT: str(int(expires_at * 1000)),
        }, expires_at

    def _sts_client(self) -> Any:
        if self._sts is None:
            try:
                import boto3  # only a server that mints needs it (mor[server])
            except ImportError as e:
                raise UnsupportedFeatureError(f"minting credentials ({ROLE_ARN}) needs boto3: pip install 'mor[server]' ({e})") from e
            assert self.minting is not None
            p = self.properties
            self._sts = boto3.client(
                "sts",
                endpoint_url=self.minting.sts_endpoint,
                region_name=first_setting(p, "s3.region", "client.region") or "us-east-1",
                aws_access_key_id=first_setting(p, "s3.access-key-id"),
                aws_secret_access_key=first_setting(p, "s3.secret-access-key"),
                aws_session_token=first_setting(p, "s3.session-token"),
            )
        return self._sts


def session_policy(prefix: str, partition: str = "aws", writes: bool = True) -> dict[str, Any]:
    """An IAM session policy that allows reading (and unless `writes` is False, writing)
    objects under `prefix` (`s3://bucket/path`) and listing under it, nothing else: what the
    assumed role may do is the intersection of its own policies and this."""
    bucket, _, path = prefix.split("://", 1)[1].partition("/")
    path = path.strip("/")
    objects = f"arn:{partition}:s3:::{bucket}/{path}/*" if path else f"arn:{partition}:s3:::{bucket}/*"
    listing = {"StringLike": {"s3:prefix": [f"{path}/*", path]}} if path else None
    list_statement: dict[str, Any] = {"Effect": "Allow", "Action": "s3:ListBucket", "Resource": f"arn:{partition}:s3:::{bucket}"}
    if listing:
        list_statement["Condition"] = listing
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Action": READ_ACTIONS + (WRITE_ACTIONS if writes else []),
                "Resource": objects,
            },
            list_statement,
            {"Effect": "Allow", "Action": "s3:GetBucketLocation", "Resource": f"arn:{partition}:s3:::{bucket}"},
        ],
    }

"""moto's server with AWS's rule for session policies, run as a child process by
tests/servers/s3.py's `IamS3Server`: `python tests/servers/moto_scoped.py -H HOST -p PORT`.

moto 5 keeps the `Policy` of an STS AssumeRole call but never applies it: credentials it mints
can do whatever the role can. AWS allows a request made with them only when the role's
policies AND the session policy allow it. This script adds that second check to moto's IAM
request check, then runs moto's server, so a test can see a credential scoped to one prefix
refused outside it. (Conditions such as `s3:prefix` on listings are not evaluated by moto.)
"""

from __future__ import annotations

import sys
from typing import Any

from moto.iam import access_control
from moto.server import main
from moto.sts.models import sts_backends

_role_check = access_control.IAMRequestBase.check_action_permitted


def _session_policy(key: access_control.AssumedRoleAccessKey) -> str | None:
    for assumed in sts_backends[key.account_id][key.partition].assumed_roles:
        if assumed.access_key_id == key._access_key_id:
            return assumed.policy
    return None


def _check_with_session_policy(self: Any, resource: str) -> None:
    _role_check(self, resource)
    key = self._access_key
    if isinstance(key, access_control.AssumedRoleAccessKey):
        policy = _session_policy(key)
        if policy is not None:
            verdict = access_control.IAMPolicy(policy).is_action_permitted(self._action, resource)
            if verdict != access_control.PermissionResult.PERMITTED:
                self._raise_access_denied()


access_control.IAMRequestBase.check_action_permitted = _check_with_session_policy  # type: ignore[method-assign]

if __name__ == "__main__":
    main(sys.argv[1:])

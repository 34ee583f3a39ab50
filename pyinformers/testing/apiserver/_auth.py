"""Authentication and authorization of the in-process API server, as a real one answers.

With no token configured the server lets everyone do everything. With a
token it behaves like a kube-apiserver with token authentication, anonymous
authentication on and RBAC:

* ``Authorization: Bearer <token>`` (the scheme in any case, as the real
  server accepts) with the admin token: allowed everything;
* a ServiceAccount token from the TokenRequest API
  (``POST .../serviceaccounts/<name>/token``): authenticated as
  ``system:serviceaccount:<namespace>:<name>``, which no role binds, so it may
  read discovery but nothing else (403);
* no ``Authorization`` header: ``system:anonymous``, which may read
  ``/version`` and the health endpoints only (403 elsewhere, not 401);
* any other credentials: 401.

The 403 messages name the user, verb, resource and namespace exactly as
RBAC's do. Thread-safe: the issued-token table is behind a lock.
"""

from __future__ import annotations

import base64
import json
import secrets
import threading
from dataclasses import dataclass

from pyinformers.testing.apiserver._status import StatusError

__all__ = ["Authenticator", "User", "ANONYMOUS", "ADMIN"]

#: what anonymous (and every authenticated user) may read without RBAC bindings
_PUBLIC_PATHS = frozenset({"/version", "/healthz", "/livez", "/readyz"})
_DISCOVERY_PREFIXES = ("/api", "/apis", "/openapi")


@dataclass(frozen=True)
class User:
    name: str
    admin: bool = False

    @property
    def authenticated(self) -> bool:
        return self.name != ANONYMOUS.name


ANONYMOUS = User("system:anonymous")
ADMIN = User("admin", admin=True)


def _unauthorized() -> StatusError:
    return StatusError(401, "Unauthorized", "Unauthorized")


class Authenticator:
    """Who a request is and what it may do (see the module docstring)."""

    def __init__(self, token: str | None) -> None:
        self._token = token
        self._lock = threading.Lock()
        self._issued: dict[str, User] = {}

    @property
    def enabled(self) -> bool:
        return self._token is not None

    def authenticate(self, header: str | None) -> User:
        """The user an ``Authorization`` header names; raises 401 for credentials nobody issued."""
        if not self.enabled:
            return ADMIN
        if header is None or not header.strip():
            return ANONYMOUS
        scheme, _, credentials = header.strip().partition(" ")
        credentials = credentials.strip()
        if scheme.lower() != "bearer" or not credentials:
            raise _unauthorized()
        if secrets.compare_digest(credentials.encode(), (self._token or "").encode()):
            return ADMIN
        with self._lock:
            user = self._issued.get(credentials)
        if user is None:
            raise _unauthorized()
        return user

    def issue_service_account_token(self, namespace: str, name: str) -> str:
        """A bearer token for ``system:serviceaccount:<namespace>:<name>`` (shaped like a JWT)."""

        def part(data: dict) -> str:
            return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

        user = f"system:serviceaccount:{namespace}:{name}"
        token = ".".join((part({"alg": "none"}), part({"sub": user}), secrets.token_urlsafe(24)))
        with self._lock:
            self._issued[token] = User(user)
        return token

    def authorize_path(self, user: User, method: str, path: str) -> None:
        """Non-resource paths: public ones for all, discovery for authenticated users."""
        if user.admin or path in _PUBLIC_PATHS:
            return
        if user.authenticated and method == "GET" and path.startswith(_DISCOVERY_PREFIXES):
            return
        raise StatusError(
            403,
            "Forbidden",
            f'forbidden: User "{user.name}" cannot {method.lower()} path "{path}"',
            details={},
        )

    def authorize_resource(
        self,
        user: User,
        verb: str,
        plural: str,
        group: str,
        namespace: str | None,
        name: str | None,
        subresource: str | None = None,
    ) -> None:
        """Resource requests: only the admin holds any RBAC binding."""
        if user.admin:
            return
        resource = f"{plural}/{subresource}" if subresource else plural
        subject = f'{plural} "{name}"' if name else plural
        where = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
        message = (
            f'{subject} is forbidden: User "{user.name}" cannot {verb} resource "{resource}" '
            f'in API group "{group}" {where}'
        )
        details: dict = {"name": name, "kind": plural} if name else {"kind": plural}
        if group:
            details["group"] = group
        raise StatusError(403, "Forbidden", message, details=details)

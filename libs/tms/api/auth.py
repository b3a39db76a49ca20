"""Bearer-token authentication and role / scope authorization.

Tokens come from a JSON file (a Kubernetes Secret mounted as a file, say)::

    {"tokens": [
      {"name": "ingest", "sha256": "<hex digest of the token>", "roles": ["writer"],
       "tables": ["events.*"], "owners": ["team-a"]},
      {"name": "ops", "token": "<plain token>", "roles": ["admin"]}
    ]}

``sha256`` keeps the secret itself out of the file; ``token`` is accepted for local use.
``tables`` (glob patterns over table ids) and ``owners`` limit what the token may touch; both
empty means every table.

Roles: ``reader`` reads; ``writer`` notifies commits (and reads its tables); ``owner`` manages
the tables in its scope (register them in a catalog that admits it, update, pause, trigger,
cancel, retry, deregister) and reads; ``admin`` may do everything and alone manages catalogs
and queues. Table owners are not trusted: what an owner token may register is limited by
each catalog's ``allowed_owners`` / ``allowed_tokens`` (see tms.api.registration).

Without a tokens file authentication is off (local development only, logged loudly at
start).
"""

from __future__ import annotations

import enum
import fnmatch
import hashlib
import hmac
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import grpc

from tms.api.errors import ApiError

MAX_TOKEN_LEN = 4096
BEARER = "bearer "


class Role(enum.StrEnum):
    READER = "reader"
    WRITER = "writer"
    OWNER = "owner"
    ADMIN = "admin"
    # May only post engines' scan and commit reports to the report intake (tms.reads): the
    # narrow role a catalog's metrics reporter carries.
    REPORTER = "reporter"


# What a role brings beyond itself (admin brings everything): an owner reads too.
IMPLIED: dict[Role, frozenset[Role]] = {Role.OWNER: frozenset({Role.READER})}
# The role each RPC needs; admin may call everything, and alone what is not listed here
# (catalogs, queues). A writer may also read the tables it may notify (GetTable), so a
# writer's client can check its table's registration and policy.
ALSO_ALLOWED: dict[str, frozenset[Role]] = {"GetTable": frozenset({Role.WRITER})}
METHOD_ROLES: dict[str, Role] = {
    "GetTable": Role.READER, "ListTables": Role.READER, "GetOperation": Role.READER,
    "ListOperations": Role.READER, "ExplainTable": Role.READER, "ListQueues": Role.READER,
    "ListHeldActions": Role.READER,
    "GetTableHistory": Role.READER, "GetFleetStatus": Role.READER,
    "SummarizeOperations": Role.READER,
    "NotifyCommit": Role.WRITER, "NotifyCommits": Role.WRITER,
    "RegisterTable": Role.OWNER, "UpdateTable": Role.OWNER, "DeregisterTable": Role.OWNER,
    "PauseTable": Role.OWNER, "ResumeTable": Role.OWNER, "CancelOperation": Role.OWNER,
    "RetryOperation": Role.OWNER, "TriggerOperation": Role.OWNER, "UpdateQueue": Role.ADMIN,
    "CreateCatalog": Role.ADMIN, "GetCatalog": Role.ADMIN, "ListCatalogs": Role.ADMIN,
    "UpdateCatalog": Role.ADMIN, "DeleteCatalog": Role.ADMIN,
}


@dataclass(frozen=True)
class Principal:
    name: str
    roles: frozenset[Role]
    tables: tuple[str, ...] = ()
    owners: tuple[str, ...] = ()

    def may(self, role: Role) -> bool:
        if role in self.roles or Role.ADMIN in self.roles:
            return True
        return any(role in IMPLIED.get(r, frozenset()) for r in self.roles)

    @property
    def admin(self) -> bool:
        return Role.ADMIN in self.roles

    @property
    def scoped(self) -> bool:
        return bool(self.tables or self.owners)

    @property
    def owner_scoped(self) -> bool:
        return bool(self.owners)

    def allows(self, table_id: str, owner: str | None) -> bool:
        """May this principal touch the table? ``owner`` None means "unknown": only the
        table-id patterns can grant access then."""
        if not self.scoped:
            return True
        if any(fnmatch.fnmatchcase(table_id, pat) for pat in self.tables):
            return True
        return owner is not None and owner in self.owners


ANONYMOUS_ADMIN = Principal("anonymous", frozenset(Role))


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def unauthenticated(message: str) -> ApiError:
    return ApiError(grpc.StatusCode.UNAUTHENTICATED, message, "UNAUTHENTICATED")


def permission_denied(message: str, **metadata: str) -> ApiError:
    return ApiError(grpc.StatusCode.PERMISSION_DENIED, message, "PERMISSION_DENIED",
                    metadata=metadata)


class Authenticator:
    def __init__(self, entries: Iterable[tuple[bytes, Principal]] | None) -> None:
        self.enabled = entries is not None
        self._entries = list(entries or [])

    @classmethod
    def disabled(cls) -> Authenticator:
        return cls(None)

    @classmethod
    def from_file(cls, path: Path) -> Authenticator:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise ValueError(f"tokens file {path}: {e}") from e
        return cls.from_config(data, str(path))

    @classmethod
    def from_config(cls, data: object, source: str = "tokens") -> Authenticator:
        if not isinstance(data, dict) or not isinstance(data.get("tokens"), list):
            raise ValueError(f"{source}: expected {{\"tokens\": [...]}}")
        entries = []
        for i, item in enumerate(data["tokens"]):
            where = f"{source}: tokens[{i}]"
            if not isinstance(item, dict):
                raise ValueError(f"{where}: expected an object")
            if ("token" in item) == ("sha256" in item):
                raise ValueError(f"{where}: give exactly one of 'token' or 'sha256'")
            try:
                roles = frozenset(Role(r) for r in item.get("roles", []))
                digest = (_digest(str(item["token"])) if "token" in item
                          else bytes.fromhex(str(item["sha256"])))
            except ValueError as e:
                raise ValueError(f"{where}: {e}") from e
            if not roles:
                raise ValueError(f"{where}: 'roles' must name at least one of reader, "
                                 "writer, owner, admin, reporter")
            if len(digest) != 32:
                raise ValueError(f"{where}: 'sha256' must be 64 hex digits")
            entries.append((digest, Principal(
                str(item.get("name", f"token-{i}")), roles,
                tuple(str(t) for t in item.get("tables", [])),
                tuple(str(o) for o in item.get("owners", [])))))
        return cls(entries)

    def authenticate(self, metadata: Sequence[tuple[str, str | bytes]] | None) -> Principal:
        if not self.enabled:
            return ANONYMOUS_ADMIN
        header = next((v for k, v in (metadata or ()) if k == "authorization"), None)
        if header is None:
            raise unauthenticated("missing bearer token (authorization: Bearer <token>)")
        if isinstance(header, bytes) or len(header) > MAX_TOKEN_LEN \
                or not header.lower().startswith(BEARER):
            raise unauthenticated("malformed authorization header; expected Bearer <token>")
        digest = _digest(header[len(BEARER):].strip())
        found = None
        for known, principal in self._entries:  # no early exit: constant time per entry
            if hmac.compare_digest(known, digest):
                found = principal
        if found is None:
            raise unauthenticated("unknown token")
        return found

    @staticmethod
    def authorize(principal: Principal, method: str) -> None:
        needed = METHOD_ROLES.get(method, Role.ADMIN)
        if not principal.may(needed) and not (ALSO_ALLOWED.get(method, frozenset())
                                               & principal.roles):
            raise permission_denied(f"token {principal.name!r} lacks role {needed.value} "
                                    f"needed by {method}", role=needed.value)

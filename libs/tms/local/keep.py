"""A local stack kept up for a person: bearer tokens for it, the lines that point the CLI at it,
and the wait until Ctrl-C (``scripts/stack``, ``scripts/demo --keep``).

The tokens are made fresh at every start and printed once; the tokens file the API reads holds
only their SHA-256 digests, so no token is left on disk. Authentication is on, as in
production: the operator's first commands are the ones they will type later.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tms.local.stack import LocalStack

TOKEN_BYTES = 24  # 192 bits of randomness per token
TOKENS_FILE_MODE = 0o600
LIVENESS_POLL_S = 1.0  # how often a kept stack checks that its processes still run
ADMIN_TOKEN_NAME = "local-admin"
WRITER_TOKEN_NAME = "local-writer"


@dataclass(frozen=True)
class LocalTokens:
    """The tokens of one local stack: an admin (catalogs, queues, every table) and a writer
    (commit notifications only), and the file the API reads them from."""

    admin: str
    writer: str
    path: Path


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def write_tokens_file(path: Path) -> LocalTokens:
    """Fresh tokens, with only their digests written to ``path`` (mode 0600)."""
    admin, writer = secrets.token_urlsafe(TOKEN_BYTES), secrets.token_urlsafe(TOKEN_BYTES)
    doc = {
        "tokens": [
            {"name": ADMIN_TOKEN_NAME, "sha256": _digest(admin), "roles": ["admin"]},
            {"name": WRITER_TOKEN_NAME, "sha256": _digest(writer), "roles": ["writer"]},
        ]
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, TOKENS_FILE_MODE)
    with os.fdopen(fd, "w") as f:
        json.dump(doc, f, indent=2)
    return LocalTokens(admin, writer, path)


def cli_env(stack: LocalStack, tokens: LocalTokens) -> dict[str, str]:
    """What the ``tms`` CLI reads to reach this stack as its admin."""
    return {"TMS_API": stack.api_address, "TMS_TOKEN": tokens.admin}


def connection_text(
    stack: LocalStack, tokens: LocalTokens, next_steps: tuple[str, ...] = ("tms catalogs list",)
) -> str:
    """What a person needs to use the stack from another shell, then ``next_steps`` (commands
    to try once the variables are set)."""
    env = cli_env(stack, tokens)
    assert stack.zookeeper is not None
    lines = [
        f"tms-api        {stack.api_address} (plaintext gRPC, bearer tokens required)",
        f"admin token    {tokens.admin}",
        f"writer token   {tokens.writer} (NotifyCommit only: give it to writers)",
        f"database       {stack.database_url}",
        f"zookeeper      {stack.zookeeper.hosts}",
        f"logs           {stack.state_dir / 'logs'}",
        "",
        "In another shell, to use the CLI against this stack:",
        *(f"  export {k}={v}" for k, v in env.items()),
        *(f"  {step}" for step in next_steps),
        "",
        "Ctrl-C stops everything.",
    ]
    return "\n".join(lines)


def keep_up(
    stack: LocalStack, say: Callable[[str], None], sleep: Callable[[float], None] = time.sleep
) -> int:
    """Wait until Ctrl-C (KeyboardInterrupt, which the caller's signal handlers raise) or until
    a service process exits on its own; 0 for Ctrl-C, 1 for a process that died (the person
    is told which, and where its log is)."""
    try:
        while True:
            dead = [s for s in stack.services if not s.alive]
            if dead:
                for s in dead:
                    code = s.proc.returncode if s.proc is not None else None
                    say(f"{s.name} exited (code {code}); its log: {s.log_path}")
                return 1
            sleep(LIVENESS_POLL_S)
    except KeyboardInterrupt:
        return 0

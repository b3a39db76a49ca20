"""Sign-in state kept by the browser, sealed by the console: the console stays stateless.

The user's API token is pasted once; the console seals it (AES-GCM with the console's session
key, the expiry inside the sealed text) into an HttpOnly, SameSite=Strict cookie (Secure over
TLS). Replicas of the console share the key (``--session-key-file``) so any of them can open
the cookie; without a key file each process makes its own, and a restart signs everyone out.

CSRF: double submit. A random value lives in its own HttpOnly, SameSite=Strict cookie and is
repeated in a hidden field of every form; a POST whose field does not match the cookie is
refused before anything else runs (sign-in included).
"""

from __future__ import annotations

import base64
import hmac
import json
import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

SESSION_COOKIE = "tms_console_session"
CSRF_COOKIE = "tms_console_csrf"
CSRF_FIELD = "csrf_token"
KEY_BYTES = 32
NONCE_BYTES = 12
CSRF_BYTES = 32
DEFAULT_SESSION_TTL_S = 8 * 3600
MAX_TOKEN_CHARS = 4096  # the API's own limit on a bearer token
SEAL_CONTEXT = b"tms-console-session-v1"


class SessionKeyError(ValueError):
    pass


def load_key(path: Path | None) -> bytes:
    """32 bytes from ``path`` (raw, or 64 hex digits / base64 text), or a fresh random key."""
    if path is None:
        return os.urandom(KEY_BYTES)
    raw = path.read_bytes()
    if len(raw) == KEY_BYTES:
        return raw
    text = raw.strip().decode("ascii", errors="replace")
    for decode in (bytes.fromhex, base64.b64decode):
        try:
            key = decode(text)
        except ValueError:
            continue
        if len(key) == KEY_BYTES:
            return key
    raise SessionKeyError(f"{path}: expected a {KEY_BYTES}-byte key (raw, hex or base64)")


@dataclass(frozen=True)
class Session:
    token: str
    expires_at: float


class SessionCodec:
    def __init__(self, key: bytes, ttl_s: float = DEFAULT_SESSION_TTL_S,
                 clock: Callable[[], float] = time.time) -> None:
        if len(key) != KEY_BYTES:
            raise SessionKeyError(f"session key must be {KEY_BYTES} bytes")
        self._aead = AESGCM(key)
        self.ttl_s = ttl_s
        self._clock = clock

    def seal(self, token: str) -> tuple[str, Session]:
        session = Session(token, self._clock() + self.ttl_s)
        plain = json.dumps({"t": token, "e": session.expires_at}).encode()
        nonce = os.urandom(NONCE_BYTES)
        sealed = nonce + self._aead.encrypt(nonce, plain, SEAL_CONTEXT)
        return base64.urlsafe_b64encode(sealed).decode("ascii"), session

    def open(self, cookie: str | None) -> Session | None:
        """The session in ``cookie``, or None when absent, tampered with or expired."""
        if not cookie:
            return None
        try:
            sealed = base64.urlsafe_b64decode(cookie.encode("ascii"))
            plain = self._aead.decrypt(sealed[:NONCE_BYTES], sealed[NONCE_BYTES:], SEAL_CONTEXT)
            data = json.loads(plain)
            session = Session(str(data["t"]), float(data["e"]))
        except Exception:  # any damage at all means "not signed in"
            return None
        if session.expires_at <= self._clock():
            return None
        return session


def new_csrf() -> str:
    return secrets.token_urlsafe(CSRF_BYTES)


def csrf_matches(cookie: str | None, field: str | None) -> bool:
    if not cookie or not field:
        return False
    return hmac.compare_digest(cookie.encode(), field.encode())


def token_problem(token: str) -> str | None:
    """Why a pasted token cannot be a bearer token, or None."""
    if not token:
        return "paste a token"
    if len(token) > MAX_TOKEN_CHARS:
        return f"a token has at most {MAX_TOKEN_CHARS} characters"
    if any(not 0x21 <= ord(c) <= 0x7E for c in token):
        return "a token is printable ASCII without spaces"
    return None

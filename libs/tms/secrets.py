"""Secrets by reference: a catalog stores where a secret is, never the secret.

A reference is ``env:TMS_SECRET_<NAME>`` (an environment variable, e.g. from a Kubernetes
Secret through ``envFrom``) or ``file:<name>`` (a file in the operators' secret directory,
``$TMS_SECRET_DIR``, e.g. a Kubernetes Secret mounted at ``/var/run/secrets/tms``). Only these
forms are accepted, so a reference cannot read an arbitrary variable (``env:PATH``) or file
(``file:../../etc/shadow``) of the service.

References are resolved only in the process and at the moment a value is needed (the
scheduler opening a catalog, the executor starting a job, the API checking a registration;
the maintenance job resolves the references its spec carries itself, in the Spark driver, so
no secret value is ever on a command line). Errors name the reference, never the value.

Standard library only: the job imports it in the Spark driver before Spark.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

ENV_PREFIX = "TMS_SECRET_"
ENV_SECRET_DIR = "TMS_SECRET_DIR"
DEFAULT_SECRET_DIR = "/var/run/secrets/tms"
MAX_SECRET_BYTES = 64 * 1024
_ENV_REF_RE = re.compile(r"^env:(TMS_SECRET_[A-Z0-9_]{1,100})$")
_FILE_REF_RE = re.compile(r"^file:([A-Za-z0-9_][A-Za-z0-9._-]{0,127})$")


class SecretError(ValueError):
    """A reference is malformed, or what it points to is not available here. Bad
    configuration: retrying does not help, the operator must fix the reference."""


@dataclass(frozen=True)
class SecretRef:
    kind: str  # "env" or "file"
    name: str

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}"


def parse_ref(ref: str) -> SecretRef:
    """A validated reference; SecretError says which forms are accepted."""
    m = _ENV_REF_RE.fullmatch(ref)
    if m:
        return SecretRef("env", m.group(1))
    m = _FILE_REF_RE.fullmatch(ref)
    if m and ".." not in m.group(1):
        return SecretRef("file", m.group(1))
    raise SecretError("a secret reference is env:TMS_SECRET_<NAME> (A-Z 0-9 _) or "
                      "file:<name> (a file in the secret directory, no slashes), "
                      f"got {ref[:80]!r}")


def secret_dir(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    return Path(env.get(ENV_SECRET_DIR) or DEFAULT_SECRET_DIR)


def resolve(ref: str, environ: Mapping[str, str] | None = None,
            directory: Path | None = None) -> str:
    """The secret's value. SecretError (naming the reference only) when it is not there."""
    parsed = parse_ref(ref)
    env = os.environ if environ is None else environ
    if parsed.kind == "env":
        value = env.get(parsed.name)
        if value is None:
            raise SecretError(f"secret {parsed} is not set in this process's environment")
        return value
    base = (directory or secret_dir(env)).resolve()
    path = (base / parsed.name).resolve()
    if path.parent != base:  # a symlink in the secret directory pointing elsewhere
        raise SecretError(f"secret {parsed} resolves outside the secret directory")
    try:
        with path.open("rb") as f:
            data = f.read(MAX_SECRET_BYTES + 1)
    except OSError as e:
        raise SecretError(f"secret {parsed} cannot be read: {e.strerror}") from None
    if len(data) > MAX_SECRET_BYTES:
        raise SecretError(f"secret {parsed} is larger than {MAX_SECRET_BYTES} bytes")
    try:
        return data.decode().rstrip("\r\n")
    except UnicodeDecodeError:
        raise SecretError(f"secret {parsed} is not UTF-8 text") from None


def resolve_all(refs: Mapping[str, str], environ: Mapping[str, str] | None = None,
                directory: Path | None = None) -> dict[str, str]:
    """Every referenced property with its value (property name -> secret)."""
    return {key: resolve(ref, environ, directory) for key, ref in refs.items()}


def env_names(refs: Mapping[str, str]) -> list[str]:
    """The environment variables ``refs`` name (``env:`` references), sorted: what a job's
    driver must inherit, and nothing more."""
    return sorted({parse_ref(r).name for r in refs.values() if parse_ref(r).kind == "env"})


def file_names(refs: Mapping[str, str]) -> list[str]:
    """The secret-directory files ``refs`` name (``file:`` references), sorted."""
    return sorted({parse_ref(r).name for r in refs.values() if parse_ref(r).kind == "file"})


__all__ = ["DEFAULT_SECRET_DIR", "ENV_PREFIX", "ENV_SECRET_DIR", "MAX_SECRET_BYTES",
           "SecretError", "SecretRef", "env_names", "file_names", "looks_secret", "parse_ref",
           "resolve", "resolve_all", "secret_dir", "uri_has_password"]

# Property names whose values must be given by reference. Deliberately broad: a false
# positive costs an operator one reference, a false negative leaks a credential.
_SECRET_KEY_RE = re.compile(
    r"pass(word|wd|phrase)?|pwd|secret|token|credential|private|access[-_.]?key|api[-_.]?key|"
    r"session[-_.]?key|account[-_.]?key|keytab|(^|[-_.])key($|[-_.])|sas|signature|auth",
    re.IGNORECASE)


def looks_secret(key: str) -> bool:
    """Whether a property of this name must be given by reference."""
    return bool(_SECRET_KEY_RE.search(key))


def uri_has_password(value: str) -> bool:
    """Whether a URI-like value carries a password (``scheme://user:pw@host``)."""
    try:
        return urlsplit(value).password is not None
    except ValueError:
        return False

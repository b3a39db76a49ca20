"""Secrets by reference: a catalog stores where a secret is, never the secret.

A reference is ``env:TMS_SECRET_<NAME>`` (an environment variable of the TMS processes, e.g.
from a Kubernetes Secret through ``envFrom``) or ``file:<name>`` (a file in the operators'
secret directory, e.g. a Kubernetes Secret mounted at ``/var/run/secrets/tms``). Only these
forms are accepted, so a reference cannot read an arbitrary variable (``env:PATH``) or file
(``file:../../etc/shadow``) of the service.

References are resolved only in the process and at the moment a value is needed (the
scheduler opening a catalog, the executor starting a job, the API checking a registration;
the maintenance job resolves the references of its spec itself, in the Spark driver). Parsing
and resolution live in ``tms.jobs.secret_refs`` (standard library only, shipped with the job).
Errors name the reference, never the value.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from tms.jobs.secret_refs import (  # the one implementation, shipped with the job too
    DEFAULT_SECRET_DIR,
    ENV_PREFIX,
    ENV_SECRET_DIR,
    MAX_SECRET_BYTES,
    SecretError,
    SecretRef,
    env_names,
    file_names,
    parse_ref,
    resolve,
    resolve_all,
    secret_dir,
)

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

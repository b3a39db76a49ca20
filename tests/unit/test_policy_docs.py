"""docs/policy.md is generated from the policy schema and must be current."""

from __future__ import annotations

from tms.policy.common import COMMON_KEYS
from tms.policy.docs import DOC_PATH, generate


def test_policy_doc_is_current() -> None:
    assert DOC_PATH.read_text() == generate(), \
        "docs/policy.md is stale: run python -m tms.policy.docs --write"


def test_policy_doc_lists_every_common_key() -> None:
    text = generate()
    assert all(f"| `{k}` |" in text for k in COMMON_KEYS)
    assert "| `target-file-size-bytes` |" in text and "#### rewrite_manifests" in text

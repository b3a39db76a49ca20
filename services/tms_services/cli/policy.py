"""``tms tables policy-keys``: the policy keys and operation parameters a table may carry,
listed from the policy schema (the same source as docs/policy.md and the API's checks)."""

from __future__ import annotations

import argparse
from typing import Any

from google.protobuf import empty_pb2

from tms.formats.registry import load_formats
from tms.policy.common import COMMON_KEYS
from tms.policy.schema import PolicyKey
from tms_services.cli.client import Client, lower
from tms_services.cli.errors import usage_error
from tms_services.cli.format import table
from tms_services.cli.output import emit

POLICY_HELP = ("policy key K=V (repeatable); the keys, types and ranges: "
               "`tms tables policy-keys [--format F]` or docs/policy.md")


def _doc(k: PolicyKey) -> dict[str, str]:
    return {"key": k.key, "type": k.describe(), "default": PolicyKey.text(k.default),
            "doc": k.doc}


def _text(sections: list[tuple[str, list[PolicyKey]]]) -> str:
    parts = []
    for title, keys in sections:
        rows = [[k.key, k.describe(), PolicyKey.text(k.default) or "-", k.doc]
                for k in sorted(keys, key=lambda k: k.key)]
        parts.append(f"{title}\n" + (table(["KEY", "TYPE", "DEFAULT", "DOC"], rows)
                                     if rows else "(none)"))
    return "\n\n".join(parts)


def _policy_keys(c: Client, args: argparse.Namespace) -> int:
    formats = load_formats()
    plugin = formats.get(args.format)
    if plugin is None:
        raise usage_error(f"tms tables policy-keys: unknown format {args.format!r}; one of: "
                          + ", ".join(sorted(formats)))
    sections = [(f"policy keys of {args.format} tables",
                 [*COMMON_KEYS.values(), *plugin.policy_keys.values()])]
    sections += [(f"parameters of {action} operations",
                  list(plugin.action_params.get(action, {}).values()))
                 for action in plugin.actions]
    doc = {"format": args.format,
           "policy": [_doc(k) for k in sections[0][1]],
           "params": {a: [_doc(k) for k in plugin.action_params.get(a, {}).values()]
                      for a in plugin.actions}}
    emit(args, empty_pb2.Empty(), lambda _m: _text(sections), json_doc=doc)
    return 0


def add_parser(ts: Any, common: argparse.ArgumentParser) -> None:
    k = ts.add_parser("policy-keys", parents=[common],
                      help="the policy keys and operation parameters of a format (no server "
                           "call)")
    k.add_argument("--format", type=lower, default="iceberg",
                   help="table-format plugin (default iceberg)")
    k.set_defaults(fn=_policy_keys)

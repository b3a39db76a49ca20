"""Where a command's result goes: JSON or text on stdout, notes for people on stderr.

Notes ("more rows: use --all") go to stderr so that a pipeline reading stdout only ever sees
rows, and never appear with ``--json``, whose stdout is exactly one JSON document.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from google.protobuf.message import Message

from tms_services.cli.format import dumps, to_dict


def emit(args: argparse.Namespace, msg: Message, human: Callable[[Any], str],
         json_doc: dict[str, Any] | None = None) -> None:
    """Print ``msg`` as JSON with ``--json`` (or ``json_doc`` for a call that answers with
    nothing to show, like DeregisterTable's Empty), else as ``human(msg)``."""
    if args.json:
        print(dumps(json_doc if json_doc is not None else to_dict(msg)))
    else:
        print(human(msg))


def note(args: argparse.Namespace, text: str) -> None:
    if not args.json:
        print(text, file=sys.stderr)


def emit_more(args: argparse.Namespace, token: str) -> None:
    if token:
        note(args, "(more rows: raise --limit or use --all)")

"""``tms catalogs list|get|create|update|delete``: the platform's catalogs (unscoped admin).

Secrets are given and shown as references only (``--secret jdbc.password=env:TMS_SECRET_PG``
or ``file:pg-password``): the value stays in the TMS processes' environment or secret
directory, never on a command line, in the database or in any output.

``update`` changes only what its flags name: ``--property K=V`` sets one entry and
``--unset-property K`` removes one (the same for secrets, storage options and the default
policy); ``--allowed-location L`` adds a location and ``--remove-allowed-location L`` removes
one (the same for owners, tokens and the discovery patterns); discovery flags change those
settings only. It reads the catalog first, since the API replaces a map or list whole.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from tms.v1 import tms_pb2
from tms_services.cli.client import Client, add_limit_options, collect, key_value, limit_of
from tms_services.cli.errors import usage_error
from tms_services.cli.format import NONE, block, cut, pairs, table, when
from tms_services.cli.output import emit, emit_more, note

CATALOG_TYPES = ("sql", "jdbc", "rest", "hive", "glue", "hadoop")
MAPS = (("property", "properties", "catalog property"),
        ("secret", "secrets", "secret reference (env:TMS_SECRET_<NAME> or file:<name>)"),
        ("storage-option", "storage_options", "storage option (fs.*, s3.*, gcs.*, adls.*, "
                                              "hdfs.*)"),
        ("default-policy", "default_policy", "default policy key of the catalog's tables"))
LISTS = (("allowed-location", "allowed_locations", "location prefix the tables live under"),
         ("allowed-owner", "allowed_owners", "owner who may register tables here"),
         ("allowed-token", "allowed_tokens", "token name that may register tables here"))
CONFIRM_ANSWERS = ("y", "yes")
DISCOVERY_CELL_CHARS = 100  # a failed run's error in `list`; `get` prints it whole
DISCOVERY_SETTINGS = ("discovery_queue", "discovery_owner", "discovery_priority",
                      "discovery_interval_s")


def _short(name: str) -> str:
    return name.removeprefix("catalogs/")


def _listed(items: Sequence[str]) -> str:
    return ", ".join(items) or NONE


def _discovery_text(d: tms_pb2.CatalogDiscovery) -> tuple[str, str]:
    settings = (f"{'on' if d.enabled else 'off'}, every {d.interval_s}s, include "
                f"{_listed(d.include)}, exclude {_listed(d.exclude)}, queue {d.queue}, "
                f"owner {d.owner or NONE}, priority {d.priority}")
    last = NONE
    if d.last_run_time.seconds:
        last = (f"{when(d.last_run_time)}: registered {d.last_registered}, missing "
                f"{d.last_missing}" + (f", error: {d.last_error}" if d.last_error else ""))
    return settings, last


def catalog_text(c: tms_pb2.Catalog) -> str:
    settings, last = _discovery_text(c.discovery)
    return block([
        ("name", c.name), ("type", c.type), ("properties", pairs(c.properties)),
        ("secrets", pairs(c.secrets)), ("storage_options", pairs(c.storage_options)),
        ("allowed_locations", _listed(c.allowed_locations)),
        ("allowed_owners", _listed(c.allowed_owners)),
        ("allowed_tokens", _listed(c.allowed_tokens)),
        ("default_policy", pairs(c.default_policy)), ("discovery", settings),
        ("last_discovery", last), ("table_count", c.table_count),
        ("create_time", when(c.create_time)), ("update_time", when(c.update_time)),
    ])


def last_discovery_cell(d: tms_pb2.CatalogDiscovery) -> str:
    """The LAST DISCOVERY column: how the last run went. A run that failed says so with its
    error (cut; ``tms catalogs get`` prints it whole): a catalog whose discovery fails
    registers nothing new and would otherwise look healthy in the list."""
    if not d.last_run_time.seconds:
        return NONE
    at = when(d.last_run_time, zone=False)
    if d.last_error:
        return cut(f"FAILED {at}: {d.last_error}", DISCOVERY_CELL_CHARS)
    return f"{at}: +{d.last_registered:,} registered, {d.last_missing:,} missing"


def _rows(catalogs: list[tms_pb2.Catalog]) -> str:
    return table(["CATALOG", "TYPE", "TABLES", "DISCOVERY", "ALLOWED LOCATIONS",
                  "UPDATED (UTC)", "LAST DISCOVERY (UTC)"],
                 [[_short(c.name), c.type, f"{c.table_count:,}",
                   "on" if c.discovery.enabled else "off", _listed(c.allowed_locations),
                   when(c.update_time, zone=False), last_discovery_cell(c.discovery)]
                  for c in catalogs], right=(2,))


def _list(c: Client, args: argparse.Namespace) -> int:
    def page(size: int, token: str) -> tms_pb2.ListCatalogsResponse:
        return c.tms.list_catalogs(page_size=size, page_token=token)

    catalogs, token = collect(page, "catalogs", limit_of(args))
    emit(args, tms_pb2.ListCatalogsResponse(catalogs=catalogs, next_page_token=token),
         lambda _m: _rows(catalogs) if catalogs else "no catalogs")
    emit_more(args, token)
    return 0


def _get(c: Client, args: argparse.Namespace) -> int:
    emit(args, c.tms.get_catalog(args.catalog), catalog_text)
    return 0


def _discovery(args: argparse.Namespace, d: tms_pb2.CatalogDiscovery) -> None:
    """Apply the discovery flags given to ``d`` (patterns added, then removed)."""
    if args.discover is not None:
        d.enabled = args.discover
    for flag, field in (("queue", "queue"), ("owner", "owner"), ("priority", "priority"),
                        ("interval_s", "interval_s")):
        value = getattr(args, f"discovery_{flag}")
        if value is not None:
            setattr(d, field, value)
    for part in ("include", "exclude"):
        items = [*getattr(d, part), *getattr(args, part)]
        gone = set(getattr(args, f"remove_{part}", []))
        getattr(d, part)[:] = [x for x in dict.fromkeys(items) if x not in gone]


def _create(c: Client, args: argparse.Namespace) -> int:
    spec = tms_pb2.Catalog(type=args.type)
    for _, field, _ in MAPS:
        getattr(spec, field).update(dict(getattr(args, field)))
    for _, field, _ in LISTS:
        getattr(spec, field).extend(getattr(args, field))
    _discovery(args, spec.discovery)
    made = c.tms.create_catalog(args.catalog, spec)
    emit(args, made, lambda m: f"created {m.name} ({m.type}, "
                               f"{len(m.allowed_locations)} allowed location(s), discovery "
                               f"{'on' if m.discovery.enabled else 'off'})")
    return 0


def _changes(args: argparse.Namespace, current: tms_pb2.Catalog) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for _, field, _ in MAPS:
        sets, unsets = getattr(args, field), getattr(args, f"unset_{field}")
        if sets or unsets:
            edited = dict(getattr(current, field))
            edited.update(sets)
            for key in unsets:
                edited.pop(key, None)
            out[field] = edited
    for _, field, _ in LISTS:
        adds, removes = getattr(args, field), getattr(args, f"remove_{field}")
        if adds or removes:
            items = dict.fromkeys([*getattr(current, field), *adds])
            out[field] = [x for x in items if x not in set(removes)]
    touched = (args.discover is not None or args.include or args.exclude or args.remove_include
               or args.remove_exclude or any(getattr(args, k) is not None
                                             for k in DISCOVERY_SETTINGS))
    if touched:
        d = tms_pb2.CatalogDiscovery()
        d.CopyFrom(current.discovery)
        _discovery(args, d)
        out["discovery"] = d
    return out


def _update(c: Client, args: argparse.Namespace) -> int:
    """A field mask of exactly the flags given, read-modify-write for maps and lists."""
    current = c.tms.get_catalog(args.catalog)
    changes = _changes(args, current)
    if not changes:
        raise usage_error("tms catalogs update: give at least one field to change")
    emit(args, c.tms.update_catalog(args.catalog, **changes), catalog_text)
    return 0


def _confirmed(args: argparse.Namespace, name: str) -> bool:
    if args.yes:
        return True
    if not sys.stdin.isatty():
        raise usage_error(f"tms catalogs delete: refusing to delete {name} without --yes "
                          "(stdin is not a terminal to ask on)")
    return input(f"delete {name}? [y/N] ").strip().lower() in CONFIRM_ANSWERS


def _delete(c: Client, args: argparse.Namespace) -> int:
    name = args.catalog if args.catalog.startswith("catalogs/") else f"catalogs/{args.catalog}"
    if not _confirmed(args, name):
        note(args, "not deleted")
        return 0
    c.tms.delete_catalog(name)
    emit(args, tms_pb2.Catalog(name=name), lambda m: f"deleted {m.name}",
         json_doc={"name": name, "deleted": True})
    return 0


def _discovery_flags(p: argparse.ArgumentParser, update: bool) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--discover", dest="discover", action="store_true", default=None,
                   help="list the catalog on an interval and register its new tables")
    g.add_argument("--no-discover", dest="discover", action="store_false",
                   help="switch discovery off")
    verb = "add" if update else "register"
    p.add_argument("--include", action="append", default=[], metavar="GLOB",
                   help=f"{verb} a namespace.table pattern discovery takes (repeatable; none: "
                        "every table)")
    p.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                   help=f"{verb} a namespace.table pattern discovery skips (repeatable)")
    if update:
        for part in ("include", "exclude"):
            p.add_argument(f"--remove-{part}", action="append", default=[], metavar="GLOB",
                           help=f"remove one {part} pattern (repeatable)")
    p.add_argument("--discovery-queue", metavar="QUEUE", help="queue of discovered tables")
    p.add_argument("--discovery-owner", metavar="OWNER", help="owner of discovered tables")
    p.add_argument("--discovery-priority", type=int, metavar="N",
                   help="priority of discovered tables, -1000..1000")
    p.add_argument("--discovery-interval-s", type=int, metavar="S",
                   help="seconds between listings, 10..86400 (0: the default, 300)")


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    t = sub.add_parser("catalogs", parents=[common],
                       help="list, get, create, update, delete catalogs (admin)")
    ts = t.add_subparsers(dest="subcommand", metavar="COMMAND", required=True,
                          help="what to do with catalogs")
    ls = ts.add_parser("list", parents=[common], help="catalogs ordered by id")
    add_limit_options(ls)
    ls.set_defaults(fn=_list)
    g = ts.add_parser("get", aliases=["show"], parents=[common], help="one catalog")
    g.add_argument("catalog", metavar="CATALOG", help="catalog id or catalogs/{id}")
    g.set_defaults(fn=_get)

    cr = ts.add_parser("create", parents=[common], help="create a catalog")
    cr.add_argument("catalog", metavar="CATALOG_ID", help="1-63 of a-z 0-9 _ (also the "
                                                          "engines' catalog name)")
    cr.add_argument("--type", required=True, type=str.lower, choices=CATALOG_TYPES,
                    help="catalog type")
    for flag, field, what in MAPS:
        cr.add_argument(f"--{flag}", dest=field, type=key_value, action="append", default=[],
                        metavar="K=V", help=f"one {what} (repeatable)")
    for flag, field, what in LISTS:
        cr.add_argument(f"--{flag}", dest=field, action="append", default=[], metavar="X",
                        help=f"one {what} (repeatable)")
    _discovery_flags(cr, update=False)
    cr.set_defaults(fn=_create)

    u = ts.add_parser("update", parents=[common],
                      help="change a catalog; only the flags given change")
    u.add_argument("catalog", metavar="CATALOG", help="catalog id or catalogs/{id}")
    for flag, field, what in MAPS:
        u.add_argument(f"--{flag}", dest=field, type=key_value, action="append", default=[],
                       metavar="K=V", help=f"set one {what} (repeatable); the others stay")
        u.add_argument(f"--unset-{flag}", dest=f"unset_{field}", action="append", default=[],
                       metavar="K", help=f"remove one {what} (repeatable)")
    for flag, field, what in LISTS:
        u.add_argument(f"--{flag}", dest=field, action="append", default=[], metavar="X",
                       help=f"add one {what} (repeatable)")
        u.add_argument(f"--remove-{flag}", dest=f"remove_{field}", action="append",
                       default=[], metavar="X", help=f"remove one {what} (repeatable)")
    _discovery_flags(u, update=True)
    u.set_defaults(fn=_update)

    d = ts.add_parser("delete", parents=[common],
                      help="delete a catalog no table uses (asks first; --yes in scripts)")
    d.add_argument("catalog", metavar="CATALOG", help="catalog id or catalogs/{id}")
    d.add_argument("--yes", action="store_true",
                   help="do not ask; required when stdin is not a terminal")
    d.set_defaults(fn=_delete)

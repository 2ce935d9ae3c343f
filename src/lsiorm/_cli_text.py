"""The text of the `lsiorm` command: its options, what it reads from them (entity names,
conditions, key values), and the lines it prints. Nothing here talks to DynamoDB.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TextIO

from lsiorm._model.schema import Table

__all__ = [
    "UsageError",
    "build_parser",
    "entity_named",
    "entity_names",
    "entity_row",
    "headed",
    "hint_for",
    "index_summary",
    "known_entities",
    "parse_command_line",
    "parse_condition",
    "plural",
    "table_label",
    "text_value",
    "typed_value",
    "write_capacity",
    "write_entities",
]


class UsageError(Exception):
    """Bad command-line input; the message is shown as is."""


# -- what the command reads ----------------------------------------------------------------------


def entity_names(args: argparse.Namespace) -> list[str]:
    """The entity names of every --entity, each of which may list several: `A,B`."""
    return [name.strip() for value in args.entity for name in value.split(",") if name.strip()]


def known_entities(table: Table) -> str:
    """The entity names of a table for a message, or "none declared"."""
    return ", ".join(sorted(table.entities)) or "none declared"


def entity_named(table: Table, name: str) -> Any:
    """The entity class of a table by its type name; a UsageError naming the known ones."""
    cls = table.entities.get(name)
    if cls is None:
        raise UsageError(f"Table {table.name!r} has no entity {name!r} ({known_entities(table)}).")
    return cls


_CONDITION = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(>=|<=|\^=|=|>|<)\s*(.*)$", re.S)


def parse_condition(text: str) -> tuple[str, Any]:
    """Parse `field=v`, `field>v` (>=, <, <=), `field^=prefix` or `field=low..high`.

    Values stay strings; the entity's field types validate them (Pydantic's lax mode turns
    "5" into 5 and ISO text into a datetime).
    """
    from lsiorm._conditions import begins_with, between, ge, gt, le, lt

    match = _CONDITION.match(text)
    if match is None:
        raise UsageError(
            f"Cannot read condition {text!r}; write field=value, field>value, field>=value, "
            "field<value, field<=value, field^=prefix or field=low..high."
        )
    name, op, value = match.groups()
    if op == "=" and ".." in value:
        low, _, high = value.partition("..")
        return name, between(low, high)
    operators: dict[str, Callable[[Any], Any]] = {
        ">": gt,
        ">=": ge,
        "<": lt,
        "<=": le,
        "^=": begins_with,
        "=": lambda v: v,
    }
    return name, operators[op](value)


def typed_value(cls: Any, name: str, value: Any) -> Any:
    """Validate a condition's or key's string value(s) against the field's type."""
    from lsiorm._conditions import Between, Compare

    if name not in cls.model_fields:
        return value  # the query reports the unknown field with its own rule
    if isinstance(value, Between):
        return Between(text_value(cls, name, value.low), text_value(cls, name, value.high))
    if isinstance(value, Compare):
        return Compare(value.op, text_value(cls, name, value.value))
    if isinstance(value, str):
        return text_value(cls, name, value)
    return value


_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_NAIVE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?")


def text_value(cls: Any, name: str, text: Any) -> Any:
    """A value typed on the command line as the field's type (pydantic's conversions, key field
    or not). A datetime field takes a date alone as its midnight in UTC, and a date and time
    without an offset as UTC: a key needs an aware datetime, and a shell has no time zone."""
    from lsiorm._model.entity_meta import meta_of
    from lsiorm._model.field_types import bare_type

    base = bare_type(cls.model_fields[name].annotation)
    if isinstance(text, str) and isinstance(base, type) and issubclass(base, datetime):
        if _DATE.fullmatch(text):
            text += "T00:00:00Z"
        elif _NAIVE_TIME.fullmatch(text):
            text += "Z"
    return meta_of(cls).validate_field(name, text, strict=False)


# -- what the command prints ---------------------------------------------------------------------


def plural(count: int, singular: str, plural_form: str | None = None) -> str:
    """`"1 local index"`, `"2 local indexes"`."""
    word = singular if count == 1 else (plural_form or f"{singular}s")
    return f"{count} {word}"


def index_summary(table: Table) -> str:
    """The secondary indexes of a table in words: "1 local and 2 global indexes"."""
    lsis, gsis = len(table.local_indexes), len(table.global_indexes)
    if not lsis and not gsis:
        return "no secondary indexes"
    if lsis and gsis:
        return f"{lsis} local and {plural(gsis, 'global index', 'global indexes')}"
    if lsis:
        return plural(lsis, "local index", "local indexes")
    return plural(gsis, "global index", "global indexes")


def table_label(declared: str, live: str) -> str:
    """A table as the command prints it: its declared name, then its live name when another
    (`--table-prefix`): `'Shop' (live table 'dev-Shop')`."""
    return repr(declared) if live == declared else f"{declared!r} (live table {live!r})"


def headed(report: object, tables: dict[str, str]) -> tuple[str, str]:
    """A report's first line, which names its table by its declared name, with each table of
    ``tables`` (declared name: live name) named as `table_label` does; and the rest of it."""
    first, _, rest = str(report).partition("\n")
    for declared, live in tables.items():
        first = first.replace(f"table {declared!r}", f"table {table_label(declared, live)}", 1)
    return first, rest


#: What a command-line user can do about an error, by its rule, where its message speaks of
#: code: shown on a second line after the message.
_HINTS = {
    "query.no-index": (
        "on the command line: add --where field=value for those fields; to read the whole "
        "table, declare the scan in your code (everything = scan(Task).filter(...)) and give "
        "it as the target, e.g. lsiorm query app.queries:everything"
    ),
    "query.where-non-key": "on the command line: give that condition with --filter, not --where",
    "query.plain-range": (
        "on the command line: give that condition with --filter, not --where (the key range "
        "is read, and the filter keeps exactly the items asked for); or give the field the "
        "printable key style (the default) in its declaration and run lsiorm backfill, and "
        "--where answers it from the key"
    ),
    "query.inexact-range": (
        "on the command line: give that condition with --filter, not --where (the key range "
        "is read, and the filter keeps exactly the items asked for)"
    ),
    "query.unabsorbed": (
        "on the command line: give those conditions with --filter, not --where (the key range "
        "is read, and the filter keeps exactly the items asked for)"
    ),
}
#: A condition on a field kept only in keys, which no filter can check (any of its rules).
_KEY_ONLY_HINT = (
    "on the command line: leave that condition out of --where and --filter, and compare the "
    "field in what lsiorm query prints (--json); each entity carries it, read from its key"
)


def hint_for(exc: BaseException) -> str | None:
    """The command line's advice for an error, if its message alone is about code."""
    if "no filter or condition can check it" in str(exc):
        return _KEY_ONLY_HINT
    return _HINTS.get(getattr(exc, "rule", ""))


def write_capacity(out: TextIO, meter: Any, live: Callable[[str], str]) -> None:
    """Print what a session's requests consumed, per table (`--capacity`); the meter keys
    them by declared name, and ``live`` gives each one's live name."""
    totals = meter.totals
    if not totals:
        out.write("Consumed capacity: none reported.\n")
    for name, consumed in totals.items():
        out.write(f"Consumed capacity of {table_label(name, live(name))}: {consumed}\n")


def entity_row(entity: Any) -> dict[str, Any]:
    """An entity as a JSON object, with its type name under "entity"."""
    return {"entity": type(entity).__name__, **entity.model_dump(mode="json", by_alias=False)}


def write_entities(out: TextIO, entities: Sequence[Any], as_json: bool) -> None:
    """Print entities, one repr a line, or as one JSON array."""
    if as_json:
        rows = [entity_row(e) for e in entities]
        out.write(json.dumps(rows, indent=2, ensure_ascii=False) + "\n")
        return
    for entity in entities:
        out.write(f"{entity!r}\n")


# -- the options ---------------------------------------------------------------------------------


def _query_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--entity", action="append", default=[], help="entity type name(s): A or A,B"
    )
    parser.add_argument("--where", action="append", default=[], help="key condition")
    parser.add_argument("--filter", action="append", default=[], help="filter condition")
    parser.add_argument("--index", help="force this index (using())")
    parser.add_argument("--select", help="comma-separated fields to return")
    parser.add_argument("--descending", action="store_true")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--consistent", action="store_true")


_JOB_ACTIONS = ("list", "show", "cancel")


def _job_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the audit-keys, adopt, backfill, relieve, migrate-table and jobs subcommands."""
    jobs = argparse.ArgumentParser(add_help=False)
    jobs.add_argument("--entity", help="entity type name, for a Table target")
    jobs.add_argument("--partition", help="read only this partition key value")
    jobs.add_argument("--segments", type=int, default=4, help="parallel scan segments")
    jobs.add_argument("--page-size", type=int, default=None, help="items per page")
    jobs.add_argument("--dry-run", action="store_true", help="price the job, change nothing")
    jobs.add_argument(
        "--ledger", help="table of the job's ledger (default: the table's reserved partition)"
    )
    jobs.add_argument("--read-budget", type=float, default=None, help="read units per second")
    jobs.add_argument("--export", help="read a DynamoDB export (folder or s3:// URL), not a scan")
    jobs.add_argument("--processes", type=int, help="run the units in this many processes")
    jobs.add_argument("--dask", help="run the units on the Dask scheduler at this address")
    sub.add_parser(
        "audit-keys",
        parents=[common, jobs],
        help="find items whose stored keys differ from their declaration",
        description="target: module:attribute of a Table or of an entity class.",
    )
    adopt = sub.add_parser(
        "adopt",
        parents=[common],
        help="sort every item of a table another tool wrote against the declarations",
        description=(
            "target: module:attribute of a Table or of an entity class. Exit 0 when every "
            "item is exactly one declared entity's and parses as it, 1 otherwise."
        ),
    )
    adopt.add_argument("--entity", help="adopt only this entity type, for a Table target")
    adopt.add_argument("--segments", type=int, default=4, help="parallel scan segments")
    adopt.add_argument("--page-size", type=int, default=None, help="items per page")
    adopt.add_argument("--examples", type=int, default=3, help="examples kept per count")
    adopt.add_argument("--dry-run", action="store_true", help="price the scan, read nothing")
    fill = sub.add_parser(
        "backfill",
        parents=[common, jobs],
        help="rewrite the stale derived keys of an entity's items",
        description="target: module:attribute of an entity class, or of a Table with --entity.",
    )
    fill.add_argument("--budget", type=float, default=None, help="write units per second")
    fill.add_argument("--checkpoint", help="ignored: the job's ledger keeps its positions")
    relieve = sub.add_parser(
        "relieve",
        parents=[common],
        help="move a collection's matching items to another table or a JSON Lines file",
        description="target: module:attribute of the Table whose collection is relieved.",
    )
    relieve.add_argument("--partition", required=True, help="the collection's partition key")
    relieve.add_argument("--entity", help="move only items of this entity type")
    relieve.add_argument("--before", help="move only items with field < value (field=value)")
    relieve.add_argument("--to-table", help="module:attribute of the destination Table")
    relieve.add_argument("--to-file", help="JSON Lines file to append the items to")
    relieve.add_argument("--budget", type=float, default=None, help="write units per second")
    relieve.add_argument("--ledger", help="table of the job's ledger")
    relieve.add_argument("--checkpoint", help="ignored: the job's ledger keeps its positions")
    relieve.add_argument("--page-size", type=int, default=None, help="items per page")
    relieve.add_argument("--dry-run", action="store_true", help="report, change nothing")
    migrate = sub.add_parser(
        "migrate-table",
        parents=[common],
        help="copy a live table into the table the target declares, while writers go on",
        description=(
            "target: module:attribute of the destination Table (created if absent). Copies "
            "--source, catches up from its stream, verifies; run it again to catch up again, "
            "--finish (writers paused) to switch. Exit 0 when ready (or switched), 1 if not."
        ),
    )
    migrate.add_argument("--source", required=True, help="the live table to copy")
    migrate.add_argument("--finish", action="store_true", help="drain, verify and switch")
    migrate.add_argument("--status", action="store_true", help="show where it stands")
    migrate.add_argument("--abandon", action="store_true", help="delete what it created")
    migrate.add_argument("--segments", type=int, default=4, help="parallel scan segments")
    migrate.add_argument("--page-size", type=int, default=None, help="items per page")
    migrate.add_argument("--budget", type=float, default=None, help="write units per second")
    migrate.add_argument("--read-budget", type=float, default=None, help="read units per second")
    migrate.add_argument("--follow", type=float, default=0.0, help="keep catching up (seconds)")
    migrate.add_argument("--ledger", help="table of the ledger (default: the destination's)")
    migrate.add_argument("--processes", type=int, help="run the units in this many processes")
    migrate.add_argument("--dask", help="run the units on the Dask scheduler at this address")
    migrate.add_argument(
        "--detach", action="store_true", help="only open the next run in the ledger, and exit"
    )
    listing = sub.add_parser(
        "jobs",
        parents=[common],
        help="list the key jobs in a table's ledger; show or cancel one",
        description="target: module:attribute of a Table or an entity class. "
        "lsiorm jobs TARGET lists the runs; lsiorm jobs TARGET show ID shows one with its "
        "units; lsiorm jobs TARGET cancel ID cancels one.",
    )
    listing.add_argument("action", nargs="?", choices=_JOB_ACTIONS)
    listing.add_argument("job", nargs="?", help="the job's id")
    listing.add_argument("--ledger", help="table of the ledger (default: the target's table)")


def parse_command_line(argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse the command line; `jobs`' action and id may also come after its options.

    argparse reads the positionals that follow the target at once, before any option; those
    after an option are left over, and are `jobs`' action and id when it has none yet.
    """
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if args.command == "jobs" and not any(word.startswith("-") for word in extra):
        words = [word for word in (args.action, args.job) if word is not None] + extra
        if len(words) <= 2:
            args.action, args.job = [*words, None, None][:2]
            extra = []
            if args.action not in (None, *_JOB_ACTIONS):
                choices = ", ".join(map(repr, _JOB_ACTIONS))
                parser.error(f"argument action: invalid choice: {args.action!r} ({choices})")
    if extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of the `lsiorm` command."""
    from lsiorm import __version__

    parser = argparse.ArgumentParser(
        prog="lsiorm", description="Manage and inspect tables declared with lsiorm."
    )
    parser.add_argument("--version", action="version", version=f"lsiorm {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("target", help="module:attribute of a Table declaration")
    common.add_argument(
        "--endpoint-url",
        default=None,
        help="default: $AWS_ENDPOINT_URL_DYNAMODB, $AWS_ENDPOINT_URL, else $LSIORM_ENDPOINT_URL",
    )
    common.add_argument("--region", default=os.environ.get("AWS_DEFAULT_REGION", "us-east-1"))
    common.add_argument("--profile", default=None, help="AWS profile for credentials and region")
    common.add_argument(
        "--table-prefix",
        default=None,
        help="prefix of the live table name, e.g. dev- (default: $LSIORM_TABLE_PREFIX)",
    )
    common.add_argument("--progress", action="store_true", help="show progress on stderr")
    common.add_argument(
        "--capacity",
        action="store_true",
        help="ask every request for its consumed capacity and print the totals per table",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    create = sub.add_parser("create-table", parents=[common], help="create the declared table")
    create.add_argument("--no-wait", action="store_true", help="do not wait until ACTIVE")
    create.add_argument(
        "--exists-ok", action="store_true", help="leave an existing table alone (exit 0)"
    )
    check = sub.add_parser(
        "check",
        parents=[common],
        help="report drift from the declaration (or a missing table), keys of another format "
        "in a sample of the items, and how each entity's keys are stored",
    )
    check.add_argument(
        "--sample",
        type=int,
        default=100,
        help="how many items to read for keys of another key format (0: read none)",
    )
    apply = sub.add_parser(
        "apply",
        parents=[common],
        help="bring the live table to its declared settings (a dry run without --yes)",
    )
    apply.add_argument("--yes", action="store_true", help="send the planned requests")
    delete = sub.add_parser("delete-table", parents=[common], help="delete the live table")
    delete.add_argument("--yes", action="store_true", help="confirm: the items are destroyed")
    delete.add_argument("--no-wait", action="store_true", help="do not wait until it is gone")
    get = sub.add_parser("get", parents=[common], help="read one item by its key")
    get.add_argument("--entity", action="append", default=[], help="entity type name")
    get.add_argument("--key", action="append", default=[], help="key field: field=value")
    get.add_argument("--consistent", action="store_true")
    get.add_argument("--json", action="store_true", help="print JSON")
    run_query = sub.add_parser("query", parents=[common], help="run a query and print its items")
    _query_options(run_query)
    run_query.add_argument("--json", action="store_true", help="print a JSON array")
    colls = sub.add_parser(
        "collections", parents=[common], help="report the largest item collections"
    )
    colls.add_argument(
        "--threshold-gb", type=float, default=None, help="default: the table's warning size"
    )
    explain = sub.add_parser(
        "explain",
        parents=[common],
        help="print a query's plan (no request is sent)",
        description="target: module:attribute of a Table (with --entity and --where) or of a "
        "Query value.",
    )
    _query_options(explain)
    explain.add_argument(
        "--sample",
        action="store_true",
        help="run the query's first page; print the model's estimate for its items beside the "
        "consumed capacity DynamoDB reports",
    )
    colls.add_argument("--top", type=int, default=10, help="how many collections to list")
    _job_commands(sub, common)
    return parser

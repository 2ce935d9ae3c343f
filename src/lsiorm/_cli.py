"""The ``lsiorm`` command line: create-table, check, explain and collections.

Every command takes ``module:attribute`` naming a Table declaration (``explain`` also accepts a
query value), plus ``--endpoint-url`` and ``--region``.

Exit codes: 0 success; 1 the command ran and found a problem (drift, a collection over the
threshold); 2 bad usage or input (unimportable target, not a Table, bad condition); 3 DynamoDB
or the connection failed.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from lsiorm._model.schema import Table
from lsiorm._ops.retry import RetryPolicy
from lsiorm.errors import DynamoError, LsiormError, ValidationError

__all__ = ["main"]

EXIT_OK, EXIT_FOUND, EXIT_USAGE, EXIT_SERVICE = 0, 1, 2, 3


class UsageError(Exception):
    """Bad command-line input; the message is shown as is."""


def load_target(spec: str) -> Any:
    """Import ``module:attribute`` (dots allowed in the attribute) and return the object."""
    module_name, sep, attr_path = spec.partition(":")
    if not sep or not module_name or not attr_path:
        raise UsageError(f"{spec!r} is not of the form module:attribute (e.g. app.models:threads).")
    sys.path.insert(0, os.getcwd())
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as exc:  # ImportError, or a declaration error raised by the module
        raise UsageError(f"Cannot import module {module_name!r}: {exc}") from exc
    finally:
        sys.path.pop(0)
    for part in attr_path.split("."):
        if not hasattr(obj, part):
            raise UsageError(f"Module {module_name!r} has no attribute {attr_path!r}.")
        obj = getattr(obj, part)
    return obj


def load_table(spec: str) -> Table:
    """Return the Table declared at ``module:attribute``."""
    obj = load_target(spec)
    if not isinstance(obj, Table):
        raise UsageError(f"{spec} is a {type(obj).__name__}, not an lsiorm Table.")
    return obj


# A command line should fail within seconds when the endpoint is down, not retry for long.
CLI_RETRY = RetryPolicy(max_attempts=3, max_delay=5.0)


def _session(args: argparse.Namespace, hooks: Sequence[object] = ()) -> Any:
    from lsiorm._session import Session

    return Session(
        endpoint_url=args.endpoint_url, region_name=args.region, retry=CLI_RETRY, hooks=hooks
    )


class Progress:
    """Dots on stderr while a long step runs, only when stderr is a terminal or forced."""

    def __init__(self, stream: TextIO, enabled: bool) -> None:
        self.stream = stream
        self.enabled = enabled

    def tick(self, message: str) -> None:
        """Show one progress message."""
        if self.enabled:
            self.stream.write(f"  {message}\n")
            self.stream.flush()


def cmd_create_table(args: argparse.Namespace, out: TextIO, progress: Progress) -> int:
    """Create the declared table and wait until it is ACTIVE."""
    table = load_table(args.target)

    class Watch:
        def after(self, request: Any, response: dict[str, Any]) -> None:
            status = (response.get("Table") or response.get("TableDescription") or {}).get(
                "TableStatus"
            )
            if status:
                progress.tick(f"{request.operation}: {table.name} is {status}")

    with _session(args, [Watch()]) as session:
        session.create_table(table, wait=not args.no_wait)
    lsis, gsis = len(table.local_indexes), len(table.global_indexes)
    out.write(f"Created table {table.name!r} with {lsis} local and {gsis} global indexes.\n")
    return EXIT_OK


def cmd_check(args: argparse.Namespace, out: TextIO, progress: Progress) -> int:
    """Compare the declaration with the live table."""
    table = load_table(args.target)
    with _session(args) as session:
        report = session.check_table(table)
    out.write(f"{report}\n")
    return EXIT_OK if report.ok else EXIT_FOUND


def cmd_collections(args: argparse.Namespace, out: TextIO, progress: Progress) -> int:
    """Report the largest item collections, checked against the warning threshold."""
    table = load_table(args.target)
    threshold = table.collection_warning_gb if args.threshold_gb is None else args.threshold_gb
    if threshold < 0:
        raise UsageError("--threshold-gb must be 0 or more.")
    seen = {"pages": 0, "items": 0}

    class Count:
        def after(self, request: Any, response: dict[str, Any]) -> None:
            if request.operation == "Scan":
                seen["pages"] += 1
                seen["items"] += int(response.get("Count") or 0)
                progress.tick(f"scanned {seen['items']} items ({seen['pages']} pages)")

    with _session(args, [Count()]) as session:
        sizes = session.largest_collections(table, 0, limit=args.top)
    over = [size for size in sizes if size.exceeds(threshold)]
    out.write(
        f"Table {table.name!r}: {seen['items']} items read; the {len(sizes)} largest "
        f"collections (warning threshold {threshold:g} GB):\n"
    )
    for size in sizes:
        flag = "  OVER THRESHOLD" if size.exceeds(threshold) else ""
        out.write(
            f"  {size.attribute}={size.key!r}: {size.total_bytes} bytes "
            f"({size.gb:.6f} GB), {size.items} items{flag}\n"
        )
    if over:
        out.write(f"{len(over)} collection(s) at or above {threshold:g} GB.\n")
        return EXIT_FOUND
    return EXIT_OK


_CONDITION = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(>=|<=|\^=|=|>|<)\s*(.*)$", re.S)


def parse_condition(text: str) -> tuple[str, Any]:
    """Parse ``field=v``, ``field>v`` (>=, <, <=), ``field^=prefix`` or ``field=low..high``.

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


def _typed(cls: Any, name: str, value: Any) -> Any:
    """Validate a condition's string value(s) against the field's type."""
    from lsiorm._conditions import Between, Compare
    from lsiorm._model.entity import meta_of

    meta = meta_of(cls)
    if name not in cls.model_fields:
        return value  # the query reports the unknown field with its own rule
    if isinstance(value, Between):
        return Between(meta.validate_field(name, value.low), meta.validate_field(name, value.high))
    if isinstance(value, Compare):
        return Compare(value.op, meta.validate_field(name, value.value))
    if isinstance(value, str):
        return meta.validate_field(name, value)
    return value


def cmd_explain(args: argparse.Namespace, out: TextIO, progress: Progress) -> int:
    """Print the plan of a query: a Query value, or one built from the command line."""
    from lsiorm._query.values import Query, query

    target = load_target(args.target)
    if isinstance(target, Query):
        if args.entity or args.where or args.filter:
            raise UsageError("--entity/--where/--filter apply to a Table target, not a Query.")
        q = target
    else:
        if not isinstance(target, Table):
            raise UsageError(f"{args.target} is a {type(target).__name__}, not a Table or Query.")
        if not args.entity:
            known = ", ".join(sorted(target.entities)) or "none declared"
            raise UsageError(f"Name the entity to query with --entity (entities: {known}).")
        classes = []
        for name in args.entity:
            cls = target.entities.get(name)
            if cls is None:
                known = ", ".join(sorted(target.entities)) or "none declared"
                raise UsageError(f"Table {target.name!r} has no entity {name!r} ({known}).")
            classes.append(cls)
        q = query(*classes)
        first = classes[0]
        where = dict(parse_condition(c) for c in args.where)
        filters = dict(parse_condition(c) for c in args.filter)
        q = q.where(**{k: _typed(first, k, v) for k, v in where.items()})
        if filters:
            q = q.filter(**{k: _typed(first, k, v) for k, v in filters.items()})
        if args.index:
            q = q.using(args.index)
        if args.select:
            q = q.select(*[f.strip() for f in args.select.split(",") if f.strip()])
        if args.descending:
            q = q.descending()
        if args.limit is not None:
            q = q.limit(args.limit)
        if args.consistent:
            q = q.consistent()
    out.write(f"{q.explain()}\n")
    return EXIT_OK


# -- key lifecycle jobs: audit-keys and backfill ---------------------------------------------


def load_job_target(spec: str, entity: str | None) -> Any:
    """Return the Table or entity class named by ``module:attribute`` (and ``--entity``)."""
    from lsiorm._model.entity import Entity

    obj = load_target(spec)
    if isinstance(obj, type) and issubclass(obj, Entity) and obj.__lsiorm__ is not None:
        if entity is not None:
            raise UsageError("--entity applies to a Table target, not an entity class.")
        return obj
    if not isinstance(obj, Table):
        raise UsageError(f"{spec} is a {type(obj).__name__}, not a Table or an entity class.")
    if entity is None:
        return obj
    found = obj.entities.get(entity)
    if found is None:
        known = ", ".join(sorted(obj.entities)) or "none declared"
        raise UsageError(f"Table {obj.name!r} has no entity {entity!r} ({known}).")
    return found


def _job_progress(progress: Progress) -> Callable[[Any], None]:
    return lambda state: progress.tick(str(state))


def cmd_audit_keys(args: argparse.Namespace, out: TextIO, progress: Progress) -> int:
    """Compare every stored item's key attributes with what its declaration derives."""
    target = load_job_target(args.target, args.entity)
    with _session(args) as session:
        priced = session.audit_keys(target, partition=args.partition, dry_run=True)
        out.write(f"Reading priced at {priced.estimate} read units.\n")
        if args.dry_run:
            out.write(f"{priced}\n")
            return EXIT_OK
        report = session.audit_keys(
            target,
            partition=args.partition,
            segments=args.segments,
            page_size=args.page_size,
            progress=_job_progress(progress),
        )
    out.write(f"{report}\n")
    return EXIT_OK if report.clean else EXIT_FOUND


def cmd_backfill(args: argparse.Namespace, out: TextIO, progress: Progress) -> int:
    """Rewrite the stale derived key attributes of one entity type's items."""
    from lsiorm._model.entity import meta_of

    target = load_job_target(args.target, args.entity)
    if isinstance(target, Table):
        known = ", ".join(sorted(target.entities)) or "none declared"
        raise UsageError(f"Name the entity to backfill with --entity (entities: {known}).")
    meta = meta_of(target)
    checkpoint = args.checkpoint or f"lsiorm-backfill-{meta.table.name}-{meta.type_name}.json"
    if not args.dry_run:
        out.write(f"checkpoint: {checkpoint} (run the same command again to resume)\n")
        out.flush()
    with _session(args) as session:
        report = session.backfill(
            target,
            partition=args.partition,
            segments=args.segments,
            write_budget=args.budget,
            checkpoint=checkpoint,
            dry_run=args.dry_run,
            page_size=args.page_size,
            progress=_job_progress(progress),
        )
    out.write(f"{report}\n")
    return EXIT_OK if report.complete else EXIT_FOUND


def cmd_relieve(args: argparse.Namespace, out: TextIO, progress: Progress) -> int:
    """Move a collection's matching items to another table or a JSON Lines file."""
    table = load_table(args.target)
    entity = load_job_target(args.target, args.entity) if args.entity else None
    if (args.to_table is None) == (args.to_file is None):
        raise UsageError("Give exactly one destination: --to-table module:attribute or --to-file.")
    match = None
    if args.before:
        if entity is None:
            raise UsageError("--before needs --entity, the type whose field it compares.")
        name, sep, text = args.before.partition("=")
        if not sep or name not in entity.model_fields:
            raise UsageError(f"--before takes field=value with a field of {entity.__name__}.")
        from lsiorm._model.entity import meta_of

        cutoff = meta_of(entity).validate_field(name, text)
        match = lambda item: getattr(item, name) < cutoff  # noqa: E731
    to_table = load_table(args.to_table) if args.to_table else None
    checkpoint = args.checkpoint or f"lsiorm-relieve-{table.name}.json"
    if not args.dry_run:
        out.write(f"checkpoint: {checkpoint} (run the same command again to resume)\n")
        out.flush()
    with _session(args) as session:
        report = session.relieve_collection(
            table,
            args.partition,
            entity=entity,
            match=match,
            to_table=to_table,
            to_file=args.to_file,
            write_budget=args.budget,
            checkpoint=checkpoint,
            dry_run=args.dry_run,
            page_size=args.page_size or 100,
            progress=_job_progress(progress),
        )
    out.write(f"{report}\n")
    return EXIT_OK if not report.failed else EXIT_FOUND


def add_job_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the audit-keys and backfill subcommands."""
    jobs = argparse.ArgumentParser(add_help=False)
    jobs.add_argument("--entity", help="entity type name, for a Table target")
    jobs.add_argument("--partition", help="read only this partition key value")
    jobs.add_argument("--segments", type=int, default=4, help="parallel scan segments")
    jobs.add_argument("--page-size", type=int, default=None, help="items per page")
    jobs.add_argument("--dry-run", action="store_true", help="price the job, change nothing")
    sub.add_parser(
        "audit-keys",
        parents=[common, jobs],
        help="find items whose stored keys differ from their declaration",
        description="target: module:attribute of a Table or of an entity class.",
    )
    fill = sub.add_parser(
        "backfill",
        parents=[common, jobs],
        help="rewrite the stale derived keys of an entity's items",
        description="target: module:attribute of an entity class, or of a Table with --entity.",
    )
    fill.add_argument("--budget", type=float, default=None, help="write units per second")
    fill.add_argument("--checkpoint", help="checkpoint file (default: lsiorm-backfill-*.json)")
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
    relieve.add_argument("--checkpoint", help="checkpoint file (default: lsiorm-relieve-*.json)")
    relieve.add_argument("--page-size", type=int, default=None, help="items per page")
    relieve.add_argument("--dry-run", action="store_true", help="report, change nothing")


COMMANDS: dict[str, Callable[[argparse.Namespace, TextIO, Progress], int]] = {
    "create-table": cmd_create_table,
    "check": cmd_check,
    "collections": cmd_collections,
    "explain": cmd_explain,
    "audit-keys": cmd_audit_keys,
    "backfill": cmd_backfill,
    "relieve": cmd_relieve,
}


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of the ``lsiorm`` command."""
    parser = argparse.ArgumentParser(
        prog="lsiorm", description="Manage and inspect tables declared with lsiorm."
    )
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("target", help="module:attribute of a Table declaration")
    common.add_argument("--endpoint-url", default=os.environ.get("LSIORM_ENDPOINT_URL"))
    common.add_argument("--region", default=os.environ.get("AWS_DEFAULT_REGION", "us-east-1"))
    common.add_argument("--progress", action="store_true", help="show progress on stderr")
    sub = parser.add_subparsers(dest="command", required=True)
    create = sub.add_parser("create-table", parents=[common], help="create the declared table")
    create.add_argument("--no-wait", action="store_true", help="do not wait until ACTIVE")
    sub.add_parser("check", parents=[common], help="report drift from the declaration")
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
    explain.add_argument("--entity", action="append", default=[], help="entity type name")
    explain.add_argument("--where", action="append", default=[], help="key condition")
    explain.add_argument("--filter", action="append", default=[], help="filter condition")
    explain.add_argument("--index", help="force this index (using())")
    explain.add_argument("--select", help="comma-separated fields to return")
    explain.add_argument("--descending", action="store_true")
    explain.add_argument("--limit", type=int)
    explain.add_argument("--consistent", action="store_true")
    colls.add_argument("--top", type=int, default=10, help="how many collections to list")
    add_job_commands(sub, common)
    return parser


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None) -> int:
    """Run the command line; return the exit code."""
    stdout = out or sys.stdout
    parser = build_parser()
    args = parser.parse_args(argv)
    progress = Progress(sys.stderr, args.progress or sys.stderr.isatty())
    try:
        return COMMANDS[args.command](args, stdout, progress)
    except UsageError as exc:
        sys.stderr.write(f"lsiorm {args.command}: {exc}\n")
        return EXIT_USAGE
    except ValidationError as exc:
        sys.stderr.write(f"lsiorm {args.command}: {exc}\n")
        return EXIT_USAGE
    except DynamoError as exc:
        sys.stderr.write(f"lsiorm {args.command}: {exc}\n")
        return EXIT_SERVICE
    except LsiormError as exc:
        sys.stderr.write(f"lsiorm {args.command}: {exc}\n")
        return EXIT_SERVICE


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

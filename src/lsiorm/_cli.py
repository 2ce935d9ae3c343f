"""The `lsiorm` command line: create-table, check, apply (a table's declared settings), explain,
collections, get, query, delete-table, adopt, the key jobs audit-keys, backfill and relieve,
migrate-table (a live table into a new one), and jobs (their ledger).

Each command is a `cmd_*` function here; its options, the text it reads and the lines it prints
are in `_cli_text`.

Every command takes `module:attribute` naming a Table declaration (the key jobs, `get`,
`explain` and `query` also an entity class; `explain` and `query` a query or scan value), plus
`--endpoint-url`, `--region`, `--profile` and `--table-prefix`. Under a prefix, each names a
table by its declared and its live name.

Exit codes: 0 success; 1 the command ran and found a problem, or nothing where it looked
(drift or a missing table, a collection over the threshold, no item for `get`, items `adopt`
cannot account for, no migration for `migrate-table --status`); 2 bad
usage or input (unimportable target, not a Table, bad condition); 3 DynamoDB or the connection
failed; 130 stopped by Ctrl-C or SIGTERM (a key job's positions are saved; the same command
resumes it).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import importlib.util
import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal, TextIO

from lsiorm._cli_text import (
    UsageError,
    entity_named,
    entity_names,
    entity_row,
    headed,
    hint_for,
    index_summary,
    known_entities,
    parse_command_line,
    parse_condition,
    plural,
    table_label,
    text_value,
    typed_value,
    write_capacity,
    write_entities,
)
from lsiorm._model.format_probe import FormatProbe, printable_attributes, probe_keys
from lsiorm._model.item_size import size_warnings
from lsiorm._model.key_layout import key_layout
from lsiorm._model.schema import Table
from lsiorm._ops.reserved import NAMESPACE as RESERVED_PARTITION
from lsiorm._ops.retry import RetryPolicy
from lsiorm._requests.reads import projection
from lsiorm.errors import LsiormError, ValidationError

__all__ = ["main"]

EXIT_OK, EXIT_FOUND, EXIT_USAGE, EXIT_SERVICE = 0, 1, 2, 3
#: Stopped by Ctrl-C or SIGTERM (the shell's convention for SIGINT).
EXIT_STOPPED = 130


def load_target(spec: str) -> Any:
    """Import `module:attribute` (dots allowed in the attribute) and return the object."""
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
    """Return the Table declared at `module:attribute`."""
    obj = load_target(spec)
    if not isinstance(obj, Table):
        cls = entity_class(obj)
        if cls is not None:
            raise UsageError(
                f"{spec} is the entity class {cls.__name__}; this command takes the Table it "
                f"is declared on (table {cls.__lsiorm__.table.name!r}), as module:attribute."
            )
        raise UsageError(f"{spec} is {_kind(obj)}, not an lsiorm Table.")
    return obj


def entity_class(obj: object) -> Any:
    """``obj`` when it is an entity class declared on a table, else None."""
    from lsiorm._model.entity import Entity

    if isinstance(obj, type) and issubclass(obj, Entity) and obj.__lsiorm__ is not None:
        return obj
    return None


def _kind(obj: object) -> str:
    """What a wrong target is, for a message: "a str", "the class Order"."""
    return f"the class {obj.__name__}" if isinstance(obj, type) else f"a {type(obj).__name__}"


# A command line should fail within seconds when the endpoint is down, not retry for long.
CLI_RETRY = RetryPolicy(max_attempts=3, max_delay=5.0)


def cli_session(
    args: argparse.Namespace, hooks: Sequence[object] = (), *, capacity: bool = False
) -> Any:
    """The Session a command works with: its options, else the environment a `Session()`
    reads (endpoint and table prefix), and a short retry policy."""
    from lsiorm._session import Session

    metered = bool(getattr(args, "capacity", False))
    session = Session(
        endpoint_url=args.endpoint_url,
        region_name=args.region,
        profile_name=args.profile,
        table_prefix=args.table_prefix,
        retry=CLI_RETRY,
        hooks=hooks,
        consumed_capacity=capacity or metered,
    )
    if metered:  # main() prints what each metered session consumed (--capacity)
        args.__dict__.setdefault("metered_sessions", []).append(session)
    return session


def _live_name(session: Any, declared: str) -> str:
    """The live name of a declared table name in a session (`--table-prefix`)."""
    resolve = session.ctx.table_name
    return declared if resolve is None else str(resolve(declared))


def _named(session: Any, table: Table) -> str:
    """A table as the command prints it: declared name, then live name when another."""
    return table_label(table.name, session.table_name(table))


def _live_first(out: TextIO, session: Any, table: Table) -> None:
    """Under a prefix, a first line naming the table both ways, before a report that speaks
    of the live table (check's drift, a migration)."""
    if session.table_name(table) != table.name:
        out.write(f"Table {_named(session, table)}:\n")


def _write_headed(out: TextIO, session: Any, report: object, *tables: Table) -> None:
    """Print a report whose first line names its tables by their declared names, with their
    live names (`--table-prefix`)."""
    first, rest = headed(report, {t.name: session.table_name(t) for t in tables})
    out.write(f"{first}\n{rest}\n" if rest else f"{first}\n")


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
    ttl_enabled: list[bool] = []

    class Watch:
        def after(self, request: Any, response: dict[str, Any]) -> None:
            if request.operation == "UpdateTimeToLive":
                ttl_enabled.append(True)
            status = (response.get("Table") or response.get("TableDescription") or {}).get(
                "TableStatus"
            )
            if status:
                progress.tick(f"{request.operation}: {table.name} is {status}")

    with cli_session(args, [Watch()]) as session:
        created = session.create_table(table, wait=not args.no_wait, exists_ok=args.exists_ok)
        name = _named(session, table)
    ttl = f" and time to live on {table.ttl_attribute!r}" if ttl_enabled else ""
    if created:
        out.write(f"Created table {name} with {index_summary(table)}{ttl}.\n")
    elif ttl_enabled:
        out.write(f"Table {name} already exists; enabled time to live on ")
        out.write(f"{table.ttl_attribute!r} (run `lsiorm check`).\n")
    else:
        out.write(f"Table {name} already exists; left as it is (run `lsiorm check`).\n")
    return EXIT_OK


def cmd_delete_table(args: argparse.Namespace, out: TextIO, progress: Progress) -> int:
    """Delete the live table of a declaration, after --yes."""
    table = load_table(args.target)
    with cli_session(args) as session:
        name = _named(session, table)
        if not args.yes:
            raise UsageError(f"Deleting table {name} destroys its items; add --yes to confirm.")
        session.delete_table(table, wait=not args.no_wait)
    out.write(f"Deleted table {name}.\n")
    return EXIT_OK


def cmd_check(args: argparse.Namespace, out: TextIO, progress: Progress) -> int:
    """Compare the declaration with the live table; look for keys of another format in a sample
    of its items; show how each entity's keys are stored."""
    table = load_table(args.target)
    if args.sample < 0:
        raise UsageError("--sample must be 0 or more.")
    with cli_session(args) as session:
        report = session.check_table(table)
        _live_first(out, session, table)  # the report names the live table
        code = _reported(out, report, report.ok)
        missing = any(drift.kind == "missing" for drift in report.drifts)
        if not missing and args.sample:
            probe = _probe_formats(session, table, args.sample)
            if probe is not None:
                _write_headed(out, session, probe, table)
                code = code if probe.ok else EXIT_FOUND
    for line in size_warnings(table):  # a warning: the exit code is the drift's
        out.write(f"warning: {line}\n")
    for cls in table.entities.values():
        out.write(f"{key_layout(cls)}\n")
    return code


def _probe_formats(session: Any, table: Table, sample: int) -> FormatProbe | None:
    """Read the first ``sample`` items' keys; say whether any was written in another format."""
    attributes = printable_attributes(table)
    if not attributes:
        return None
    names = [table.partition_key.name, *attributes]
    # The session sends it under the table's live name.
    params = {"TableName": table.name, "Limit": sample, **projection(names)}
    response = session.call("Scan", params, tables=[table])
    return probe_keys(table, response.get("Items", ()), skip_partition=RESERVED_PARTITION)


def cmd_apply(args: argparse.Namespace, out: TextIO, progress: Progress) -> int:
    """Plan (a dry run) or, with --yes, send the requests that give the live table its
    declared settings; exit 1 when drift is left that no request fixes."""
    table = load_table(args.target)

    class Watch:
        def before(self, request: Any) -> None:
            if request.operation != "DescribeTable":
                progress.tick(f"{request.operation} on {table.name}")

    with cli_session(args, [Watch()] if args.yes else []) as session:
        report = session.apply_table(table, dry_run=not args.yes)
        _live_first(out, session, table)
    if not args.yes:
        out.write(f"{report.plan}\n")
        if report.plan.steps:
            out.write("Dry run: nothing was sent; add --yes to apply.\n")
        return EXIT_OK if not report.plan.left else EXIT_FOUND
    return _reported(out, report, report.ok)


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

    with cli_session(args, [Count()]) as session:
        sizes = session.largest_collections(table, 0, limit=args.top)
        name = _named(session, table)
    over = [size for size in sizes if size.exceeds(threshold)]
    read = plural(seen["items"], "item")
    if not sizes:
        out.write(f"Table {name}: {read} read; no item collections.\n")
        return EXIT_OK
    which = "the largest collection" if len(sizes) == 1 else f"the {len(sizes)} largest collections"
    out.write(f"Table {name}: {read} read; {which} (warning threshold {threshold:g} GB):\n")
    for size in sizes:
        flag = "  OVER THRESHOLD" if size.exceeds(threshold) else ""
        out.write(
            f"  {size.attribute}={size.key!r}: {size.total_bytes} bytes "
            f"({size.gb:.6f} GB), {size.items} items{flag}\n"
        )
    if over:
        out.write(f"{plural(len(over), 'collection')} at or above {threshold:g} GB.\n")
        return EXIT_FOUND
    return EXIT_OK


def _built_query(args: argparse.Namespace, target: Any) -> Any:
    """The query the command line describes: a query or scan value, or one built from the
    options on a Table (with --entity) or on an entity class."""
    from lsiorm._query.values import Query, Scan, query

    names = entity_names(args)
    if isinstance(target, (Query, Scan)):
        if names or args.where or args.filter:
            raise UsageError(
                "--entity/--where/--filter apply to a Table or an entity class target, "
                "not to a query or scan value."
            )
        return target
    q = query(*_query_entities(args.target, target, names))
    first = q.entities[0]
    # One condition at a time: two on a field (a range from >= and <) both hold.
    for name, value in (parse_condition(c) for c in args.where):
        q = q.where(**{name: typed_value(first, name, value)})
    for name, value in (parse_condition(c) for c in args.filter):
        q = q.filter(**{name: typed_value(first, name, value)})
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
    return q


def _query_entities(spec: str, target: Any, names: list[str]) -> list[Any]:
    """The entity classes a query built from the options reads: the entity class the target
    names, or those --entity names on the target Table."""
    cls = entity_class(target)
    if cls is not None:
        if names:
            raise UsageError(
                f"--entity applies to a Table target; {spec} is the entity class {cls.__name__}."
            )
        return [cls]
    if not isinstance(target, Table):
        raise UsageError(
            f"{spec} is {_kind(target)}, not a Table, an entity class, or a query or scan "
            "value (query(...) or scan(...) in your code)."
        )
    if not names:
        known = known_entities(target)
        raise UsageError(f"Name the entity to query with --entity (entities: {known}).")
    return [entity_named(target, name) for name in names]


def cmd_explain(args: argparse.Namespace, out: TextIO, progress: Progress) -> int:
    """Print the plan of a query: a Query value, or one built from the command line."""
    q = _built_query(args, load_target(args.target))
    if not args.sample:
        from lsiorm._io.environment import table_prefix

        table = q.plan().table
        prefix = table_prefix() if args.table_prefix is None else args.table_prefix
        live = prefix + table.name  # as a session names it; nothing is sent
        if live != table.name:  # the plan names the declared table; nothing is sent
            out.write(f"Table {table_label(table.name, live)}:\n")
        out.write(f"{q.explain()}\n")
        return EXIT_OK
    out.write(f"{_sampled(args, q)}\n")
    return EXIT_OK


def cmd_query(args: argparse.Namespace, out: TextIO, progress: Progress) -> int:
    """Run a query and print its items (`--json` for a JSON array)."""
    target = load_target(args.target)
    q = _built_query(args, target)
    with cli_session(args) as session:
        items = session.all(q)
    write_entities(out, items, args.json)
    if not args.json:
        out.write(f"({plural(len(items), 'item')})\n")
    return EXIT_OK


def cmd_get(args: argparse.Namespace, out: TextIO, progress: Progress) -> int:
    """Read one item by its key fields (`--key field=value`, repeated)."""
    classes = _query_entities(args.target, load_target(args.target), entity_names(args))
    if len(classes) != 1:
        known = known_entities(classes[0].__lsiorm__.table)
        raise UsageError(f"Name exactly one entity with --entity (entities: {known}).")
    cls = classes[0]
    key: dict[str, Any] = {}
    for text in args.key:
        name, sep, value = text.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"Cannot read key {text!r}; write field=value.")
        key[name.strip()] = typed_value(cls, name.strip(), value)
    with cli_session(args) as session:
        item = session.get(cls, key, consistent=args.consistent)
    if item is None:
        sys.stderr.write(f"lsiorm get: no {cls.__name__} with {key!r}.\n")
        return EXIT_FOUND
    if args.json:
        out.write(json.dumps(entity_row(item), indent=2, ensure_ascii=False) + "\n")
    else:
        out.write(f"{item!r}\n")
    return EXIT_OK


def _sampled(args: argparse.Namespace, q: Any) -> str:
    """Run a query's first page; return its explanation with the estimate and the measure.

    The model prices each request of the page from its exact parameters and the whole items it
    returned, read again by key on an unmetered session (items a filter dropped are not seen).
    """
    from lsiorm._model.capacity import ReadEstimate, estimate_request
    from lsiorm._query.explain import Explanation

    plan = q.plan()
    table = plan.table
    primary = [k for k in table.index_key_attributes(None) if k is not None]
    sent: list[tuple[str, dict[str, Any], dict[str, Any]]] = []

    class Record:
        def after(self, request: Any, response: dict[str, Any]) -> None:
            if request.operation in ("Query", "Scan"):
                sent.append((request.operation, request.params, response))

    with cli_session(args, [Record()], capacity=True) as session:
        first = next(iter(session.pages(q)))
        name = _named(session, table)
    estimate = ReadEstimate(table.name, 0.0)
    with cli_session(args) as plain:
        for operation, params, response in sent:
            items = []
            for row in response.get("Items") or ():
                key = {k: row[k] for k in primary}
                found = plain.call("GetItem", {"TableName": table.name, "Key": key})
                if "Item" in found:
                    items.append(found["Item"])
            kind: Literal["Query", "Scan"] = "Query" if operation == "Query" else "Scan"
            estimate = estimate + estimate_request(table, kind, params, items)
    explanation = Explanation(plan, estimate).with_measured(first.consumed)
    return (
        f"{explanation}\n  sampled: the first page, {len(first.items)} items, "
        f"{len(sent)} request(s) to {name}"
    )


# -- key lifecycle jobs: audit-keys and backfill ---------------------------------------------


def load_job_target(spec: str, entity: str | None) -> Any:
    """Return the Table or entity class named by `module:attribute` (and `--entity`)."""
    obj = load_target(spec)
    if entity_class(obj) is not None:
        if entity is not None:
            raise UsageError("--entity applies to a Table target, not an entity class.")
        return obj
    if not isinstance(obj, Table):
        raise UsageError(f"{spec} is {_kind(obj)}, not a Table or an entity class.")
    if entity is None:
        return obj
    return entity_named(obj, entity)


def _table_of(target: Any) -> Table:
    """The table of a key job's target: the Table itself, or an entity class's."""
    from lsiorm._model.entity_meta import meta_of

    return target if isinstance(target, Table) else meta_of(target).table


def _ignored_checkpoint(args: argparse.Namespace) -> None:
    """The --checkpoint of 0.2's development versions: still accepted, said to be ignored (the
    ledger resumes)."""
    if args.checkpoint is not None:
        sys.stderr.write(
            f"lsiorm {args.command}: --checkpoint is ignored: the job's ledger in DynamoDB keeps "
            "its positions; run the same command again to resume.\n"
        )


@contextlib.contextmanager
def _job_progress(
    args: argparse.Namespace, progress: Progress, label: str
) -> Iterator[Callable[[Any], object]]:
    """A job's progress: the run's id kept for the stop message, and a bar on stderr (items,
    rate, ETA) when progress is shown."""

    def seen(state: Any) -> None:
        args.job_id = state.job

    if not progress.enabled:
        yield seen
        return
    from lsiorm._io.progress_bar import ProgressBar

    with ProgressBar(label, progress.stream) as bar:

        def shown(state: Any) -> None:
            seen(state)
            bar(state)

        yield shown


@contextlib.contextmanager
def _executor(args: argparse.Namespace) -> Iterator[Any]:
    """The executor the job's units run on: threads here (None), processes, or a Dask cluster."""
    if getattr(args, "dask", None):
        try:
            distributed: Any = importlib.import_module("distributed")
        except ImportError as exc:
            raise UsageError('--dask needs the dask extra: pip install "lsiorm[dask]"') from exc
        with distributed.Client(args.dask) as client:
            yield client.get_executor()
        return
    if getattr(args, "processes", None):
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(args.processes) as pool:
            yield pool
        return
    yield None


def cmd_audit_keys(args: argparse.Namespace, out: TextIO, progress: Progress) -> int:
    """Compare every stored item's key attributes with what its declaration derives."""
    target = load_job_target(args.target, args.entity)
    table = _table_of(target)
    with cli_session(args) as session:
        # A table is priced from DescribeTable, before reading: the report's first line, with
        # its price, comes first, and the rest after the read. A partition is priced by
        # reading it, so its whole report comes after the read.
        if args.partition is None or args.dry_run:
            priced = session.audit_keys(
                target, partition=args.partition, dry_run=True, page_size=args.page_size
            )
            first, rest = headed(priced, {table.name: session.table_name(table)})
            out.write(f"{first}\n")
            if args.dry_run:
                return _reported(out, rest, True)
        with _job_progress(args, progress, "audit-keys") as shown, _executor(args) as executor:
            report = session.audit_keys(
                target,
                **_scan_options(args),
                **_job_options(args, shown, executor),
                export=args.export,
            )
        if args.partition is None:
            return _reported(out, headed(report, {})[1], report.clean)
        _write_headed(out, session, report, table)
    return EXIT_OK if report.clean else EXIT_FOUND


def cmd_adopt(args: argparse.Namespace, out: TextIO, progress: Progress) -> int:
    """Sort every item of a table against its declarations; exit 1 unless all are accounted."""
    target = load_job_target(args.target, args.entity)
    table = _table_of(target)
    options = {"segments": args.segments, "page_size": args.page_size, "examples": args.examples}
    with cli_session(args) as session:
        # The report's first line, with the price, before the read; the rest after it.
        priced = session.adopt(target, dry_run=True, **options)
        first, rest = headed(priced, {table.name: session.table_name(table)})
        out.write(f"{first}\n")
        if args.dry_run:
            return _reported(out, rest, True)
        with _job_progress(args, progress, "adopt") as shown:
            report = session.adopt(target, progress=shown, **options)
    return _reported(out, headed(report, {})[1], report.accounted)


def cmd_backfill(args: argparse.Namespace, out: TextIO, progress: Progress) -> int:
    """Rewrite the stale derived key attributes of one entity type's items."""
    from lsiorm._model.entity_meta import meta_of

    target = load_job_target(args.target, args.entity)
    if isinstance(target, Table):
        known = known_entities(target)
        raise UsageError(f"Name the entity to backfill with --entity (entities: {known}).")
    meta_of(target)  # an entity class of a declared table
    _ignored_checkpoint(args)
    with (
        cli_session(args) as session,
        _job_progress(args, progress, "backfill") as shown,
        _executor(args) as executor,
    ):
        report = session.backfill(
            target,
            **_scan_options(args),
            **_job_options(args, shown, executor),
            write_budget=args.budget,
            dry_run=args.dry_run,
            export=args.export,
        )
        _write_headed(out, session, report, meta_of(target).table)
    return EXIT_OK if report.complete else EXIT_FOUND


def cmd_relieve(args: argparse.Namespace, out: TextIO, progress: Progress) -> int:
    """Move a collection's matching items to another table or a JSON Lines file."""
    table = load_table(args.target)
    entity = load_job_target(args.target, args.entity) if args.entity else None
    if (args.to_table is None) == (args.to_file is None):
        raise UsageError("Give exactly one destination: --to-table module:attribute or --to-file.")
    match: Callable[[Any], bool] | None = None
    if args.before:
        if entity is None:
            raise UsageError("--before needs --entity, the type whose field it compares.")
        name, sep, text = args.before.partition("=")
        if not sep or name not in entity.model_fields:
            raise UsageError(f"--before takes field=value with a field of {entity.__name__}.")
        # Typed on a command line: text is converted to the field's type, key field or not.
        cutoff = text_value(entity, name, text)

        def match(item: Any) -> bool:
            return bool(getattr(item, name) < cutoff)

    to_table = load_table(args.to_table) if args.to_table else None
    _ignored_checkpoint(args)
    with cli_session(args) as session, _job_progress(args, progress, "relief") as shown:
        report = session.relieve_collection(
            table,
            args.partition,
            entity=entity,
            match=match,
            to_table=to_table,
            to_file=args.to_file,
            write_budget=args.budget,
            dry_run=args.dry_run,
            page_size=args.page_size or 100,
            progress=shown,
            ledger=args.ledger,
        )
        _write_headed(out, session, report, table, *([to_table] if to_table else []))
    return EXIT_OK if not report.failed else EXIT_FOUND


def cmd_migrate_table(args: argparse.Namespace, out: TextIO, progress: Progress) -> int:
    """Copy a live table into the table the target declares; catch up, verify, switch.

    Exit 0 when the migration is ready to switch (or switched, with --finish; or abandoned;
    or its next run opened, with --detach), 1 when it is not yet (lag, or differences: the
    report lists them), or when --status finds no migration recorded (as `get` finds no item).
    """
    import warnings

    from lsiorm.errors import MigrationWarning

    table = load_table(args.target)
    actions = [args.finish, args.status, args.abandon, args.detach]
    if sum(actions) > 1:
        raise UsageError("Give at most one of --finish, --status, --abandon and --detach.")
    with (
        cli_session(args) as session,
        _job_progress(args, progress, "migrate-table") as shown,
        _executor(args) as executor,
        warnings.catch_warnings(record=True) as warned,
    ):
        warnings.simplefilter("always", MigrationWarning)
        try:
            report = session.migrate_table(
                table,
                args.source,
                finish=args.finish,
                status=args.status,
                abandon=args.abandon,
                segments=args.segments,
                write_budget=args.budget,
                page_size=args.page_size,
                follow=args.follow,
                detach=args.detach,
                **_job_options(args, shown, executor),
            )
        except ValidationError as exc:
            if args.status and exc.rule == "migrate.unknown":  # asked, and found nothing
                return _failed(args.command, exc, EXIT_FOUND)
            raise
        _live_first(out, session, table)  # the report names the live tables
    for warning in warned:
        out.write(f"warning: {warning.message}\n")
    if args.abandon or args.detach:
        return _reported(out, report, True)
    done = report.phase == "switched" if args.finish else report.ready
    return _reported(out, report, done)


def _scan_options(args: argparse.Namespace) -> dict[str, Any]:
    """How a key job reads: one partition or the whole table, in segments, in pages."""
    return {"partition": args.partition, "segments": args.segments, "page_size": args.page_size}


def _job_options(
    args: argparse.Namespace, shown: Callable[[Any], object], executor: Any
) -> dict[str, Any]:
    """What every key job that runs units takes alike: where its progress goes, the executor
    and the ledger of its units, and its read budget."""
    return {
        "progress": shown,
        "executor": executor,
        "ledger": args.ledger,
        "read_budget": args.read_budget,
    }


def cmd_jobs(args: argparse.Namespace, out: TextIO, progress: Progress) -> int:
    """List the runs of key jobs in a table's ledger (and the table migrations, with their
    lag); show one, or cancel one."""
    obj = load_job_target(args.target, None)
    from lsiorm._migration.plan import migration_summary

    table = _table_of(obj)
    action = args.action or "list"
    if action != "list" and not args.job:
        raise UsageError(f"lsiorm jobs ... {action} needs the job's id.")
    with cli_session(args) as session:
        if action == "list":
            records = session.jobs(table, ledger=args.ledger)
            if not records:
                out.write(f"No jobs in the ledger of table {_named(session, table)}.\n")
            for state in _migrations(session, table, args.ledger):
                out.write(f"{migration_summary(state, records, time.time())}\n")
            for record in records:
                out.write(f"{record}\n")
            return EXIT_OK
        if action == "cancel":
            cancelled = session.cancel_job(table, args.job, ledger=args.ledger)
            out.write(
                f"Cancelled job {args.job}: its workers stop at their next page.\n"
                if cancelled
                else f"Job {args.job} had already ended; nothing to cancel.\n"
            )
            return EXIT_OK if cancelled else EXIT_FOUND
        record = session.job(table, args.job, ledger=args.ledger)
    out.write(f"{record}\n")
    for unit in record.units:
        counts = ", ".join(f"{k}={v}" for k, v in sorted(unit.counts.items()) if ":" not in k)
        holder = f", held until {unit.lease:.0f}" if unit.owner else ""
        out.write(f"  {unit.unit.id}: {unit.state}, runs {unit.runs}{holder}; {counts}\n")
    counts = record.counts()
    total = ", ".join(f"{k}={v}" for k, v in sorted(counts.items()) if ":" not in k)
    out.write(f"  counts: {total}\n")
    from lsiorm._jobs.pacing import hot_partitions, throttled_resources
    from lsiorm._jobs.write_tally import throttle_lines

    for line in throttle_lines(throttled_resources(counts), hot_partitions(counts), most=20):
        out.write(f"{line}\n")
    return EXIT_OK


def _migrations(session: Any, table: Table, ledger: str | None) -> list[Any]:
    """The table migrations whose state is in the ledger (with their lag, for `lsiorm jobs`)."""
    from lsiorm._jobs.options import ledger_location
    from lsiorm._migration.plan import MigrationStore

    store = MigrationStore(session.ctx, ledger_location(session.ctx, table, ledger))
    states: list[Any] = session.run(store.states())
    return states


def _reported(out: TextIO, report: object, ok: bool) -> int:
    """Print a report; exit 0 when it is `ok`, 1 when it found a problem."""
    out.write(f"{report}\n")
    return EXIT_OK if ok else EXIT_FOUND


COMMANDS: dict[str, Callable[[argparse.Namespace, TextIO, Progress], int]] = {
    "create-table": cmd_create_table,
    "check": cmd_check,
    "apply": cmd_apply,
    "collections": cmd_collections,
    "explain": cmd_explain,
    "get": cmd_get,
    "query": cmd_query,
    "delete-table": cmd_delete_table,
    "audit-keys": cmd_audit_keys,
    "adopt": cmd_adopt,
    "backfill": cmd_backfill,
    "relieve": cmd_relieve,
    "migrate-table": cmd_migrate_table,
    "jobs": cmd_jobs,
}


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None) -> int:
    """Run the command line; return the exit code."""
    stdout = out or sys.stdout
    args = parse_command_line(argv)
    progress = Progress(sys.stderr, args.progress or sys.stderr.isatty())
    try:
        with _terminated_as_interrupt():
            code = COMMANDS[args.command](args, stdout, progress)
        for session in getattr(args, "metered_sessions", ()):
            write_capacity(stdout, session.capacity, functools.partial(_live_name, session))
        return code
    except (UsageError, ValidationError) as exc:
        return _failed(args.command, exc, EXIT_USAGE)
    except LsiormError as exc:  # DynamoDB refused (a DynamoError), or could not be reached
        return _failed(args.command, exc, EXIT_SERVICE)
    except KeyboardInterrupt:
        job = getattr(args, "job_id", None)
        where = f" (job {job})" if job else ""
        return _failed(
            args.command,
            Exception(
                f"stopped{where}; positions are saved: run the same command again to resume."
            ),
            EXIT_STOPPED,
        )


@contextlib.contextmanager
def _terminated_as_interrupt() -> Iterator[None]:
    """SIGTERM stops a command as Ctrl-C does (a job then releases its leases), in the main
    thread only: elsewhere the handler is left as it is."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _failed(command: str, exc: Exception, code: int) -> int:
    sys.stderr.write(f"lsiorm {command}: {exc}\n")
    hint = hint_for(exc)
    if hint is not None:
        sys.stderr.write(f"lsiorm {command}: {hint}\n")
    return code


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

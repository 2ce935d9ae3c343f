"""A table's operational settings as code: what `Table(...)` declares besides its keys and indexes.

Each setting is None unless declared, and a setting left None is not managed: `create_table`
leaves it to DynamoDB's default, `check` does not compare it, `apply` does not change it. What
can be declared:

* ``warm_throughput`` (table and each global index): the read and write units per second the
  table must be ready to serve at once. DynamoDB only raises warm throughput (it raises it by
  itself too), so a live value at or above the declared one is no drift;
* ``on_demand_throughput`` (table and each global index of an on-demand table): the most read
  and write request units it may consume; a unit left None has no maximum;
* ``point_in_time_recovery`` and its ``recovery_period_days`` (1 to 35; DynamoDB's default 35);
* ``deletion_protection``;
* ``stream``: the stream's view type, or False for no stream;
* ``tags`` (keys other than ``aws:``-prefixed ones, which AWS manages);
* ``resource_policy``: a resource-based policy document, as JSON text or a mapping.

This module holds the values, their rules (checked when a `Table` is constructed), their part of
the CreateTable request, and how a live table differs from them (pure; the reads are
`lsiorm._ops.tables`).
"""

from __future__ import annotations

import json
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

__all__ = [
    "LiveSettings",
    "OnDemandThroughput",
    "StreamViewType",
    "TableSettings",
    "WarmThroughput",
    "check_settings",
    "creation_parts",
    "policy_text",
    "settings_drifts",
]

StreamViewType = Literal["KEYS_ONLY", "NEW_IMAGE", "OLD_IMAGE", "NEW_AND_OLD_IMAGES"]
_VIEW_TYPES: frozenset[str] = frozenset(typing.get_args(StreamViewType))
_MAX_TAGS: Final = 50
_MAX_POLICY_BYTES: Final = 20 * 1024


@dataclass(frozen=True)
class WarmThroughput:
    """Read and write units per second a table (or global index) serves at once, pre-warmed.

    Either may be None (not declared). DynamoDB raises warm throughput, never lowers it.
    """

    read_units_per_second: int | None = None
    write_units_per_second: int | None = None

    def request(self) -> dict[str, int]:
        """The ``WarmThroughput`` part of a CreateTable or UpdateTable request."""
        out: dict[str, int] = {}
        if self.read_units_per_second is not None:
            out["ReadUnitsPerSecond"] = self.read_units_per_second
        if self.write_units_per_second is not None:
            out["WriteUnitsPerSecond"] = self.write_units_per_second
        return out


@dataclass(frozen=True)
class OnDemandThroughput:
    """The most request units an on-demand table (or global index) may consume per second.

    A unit left None has no maximum (``apply`` removes one that is set).
    """

    max_read_request_units: int | None = None
    max_write_request_units: int | None = None

    def request(self, *, removing: bool = False) -> dict[str, int]:
        """The ``OnDemandThroughput`` part of a request; with ``removing``, a unit left None is
        sent as -1, which removes a maximum that is set."""
        out: dict[str, int] = {}
        for name, value in (
            ("MaxReadRequestUnits", self.max_read_request_units),
            ("MaxWriteRequestUnits", self.max_write_request_units),
        ):
            if value is not None:
                out[name] = value
            elif removing:
                out[name] = -1
        return out


@dataclass(frozen=True)
class TableSettings:
    """The operational settings of a table declaration (see the module doc); None: unmanaged."""

    warm_throughput: WarmThroughput | None = None
    on_demand_throughput: OnDemandThroughput | None = None
    point_in_time_recovery: bool | None = None
    recovery_period_days: int | None = None
    deletion_protection: bool | None = None
    stream: StreamViewType | Literal[False] | None = None
    tags: tuple[tuple[str, str], ...] | None = None
    resource_policy: str | None = None

    @property
    def tag_map(self) -> dict[str, str] | None:
        """The declared tags as a mapping (None: not managed)."""
        return None if self.tags is None else dict(self.tags)


def policy_text(policy: str | Mapping[str, Any] | None) -> str | None:
    """A resource policy as the JSON text sent to DynamoDB (a mapping is written compactly)."""
    if policy is None or isinstance(policy, str):
        return policy
    return json.dumps(policy, separators=(",", ":"), sort_keys=True)


def _positive(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def check_settings(settings: TableSettings, name: str, billing_mode: str) -> Iterator[str]:
    """Yield ``rule: message`` for each rule the table's settings break (see `table_rules`)."""
    warm = settings.warm_throughput
    if warm is not None:
        units = (warm.read_units_per_second, warm.write_units_per_second)
        if all(u is None for u in units) or not all(u is None or _positive(u) for u in units):
            yield (
                f"table.warm-throughput: Table {name!r} declares warm throughput {warm!r}; give "
                "read and/or write units per second, each a whole number of at least 1."
            )
    yield from _on_demand(settings.on_demand_throughput, f"Table {name!r}", billing_mode)
    days = settings.recovery_period_days
    if days is not None:
        if settings.point_in_time_recovery is not True:
            yield (
                f"table.recovery-period: Table {name!r} declares recovery_period_days={days!r} "
                "without point_in_time_recovery=True."
            )
        elif not _positive(days) or days > 35:
            yield (
                f"table.recovery-period: Table {name!r} declares recovery_period_days={days!r}; "
                "DynamoDB keeps 1 to 35 days."
            )
    stream = settings.stream
    if stream is not None and stream is not False and stream not in _VIEW_TYPES:
        yield (
            f"table.stream: Table {name!r} declares stream={stream!r}; give one of "
            f"{', '.join(sorted(_VIEW_TYPES))}, or False for no stream."
        )
    yield from _tags(settings.tags, name)
    yield from _policy(settings.resource_policy, name)


def _on_demand(
    throughput: OnDemandThroughput | None, where: str, billing_mode: str
) -> Iterator[str]:
    if throughput is None:
        return
    if billing_mode != "PAY_PER_REQUEST":
        yield (
            f"table.on-demand-throughput: {where} declares an on-demand maximum throughput, "
            "which only an on-demand (PAY_PER_REQUEST) table has."
        )
    units = (throughput.max_read_request_units, throughput.max_write_request_units)
    if not all(u is None or _positive(u) for u in units):
        yield (
            f"table.on-demand-throughput: {where} declares {throughput!r}; each maximum is a "
            "whole number of at least 1, or None for no maximum."
        )


def check_index_settings(
    index_name: str,
    warm: WarmThroughput | None,
    on_demand: OnDemandThroughput | None,
    billing_mode: str,
) -> Iterator[str]:
    """Yield ``rule: message`` for each rule a global index's settings break."""
    where = f"Global secondary index {index_name!r}"
    if warm is not None:
        units = (warm.read_units_per_second, warm.write_units_per_second)
        if all(u is None for u in units) or not all(u is None or _positive(u) for u in units):
            yield (
                f"table.warm-throughput: {where} declares warm throughput {warm!r}; give read "
                "and/or write units per second, each a whole number of at least 1."
            )
    yield from _on_demand(on_demand, where, billing_mode)


def _tags(tags: tuple[tuple[str, str], ...] | None, name: str) -> Iterator[str]:
    if tags is None:
        return
    if len(tags) > _MAX_TAGS:
        yield f"table.tags: Table {name!r} declares {len(tags)} tags; a table has at most 50."
    for key, value in tags:
        if not isinstance(key, str) or not 1 <= len(key) <= 128 or key.startswith("aws:"):
            yield (
                f"table.tags: Table {name!r} declares the tag key {key!r}; a key is 1 to 128 "
                "characters and does not start with 'aws:' (AWS's own tags)."
            )
        if not isinstance(value, str) or len(value) > 256:
            yield (
                f"table.tags: Table {name!r} declares the tag {key!r} with the value "
                f"{value!r}; a value is text of at most 256 characters."
            )


def _policy(policy: str | None, name: str) -> Iterator[str]:
    if policy is None:
        return
    try:
        parsed = json.loads(policy)
    except (TypeError, ValueError):
        yield f"table.resource-policy: Table {name!r} declares a resource policy that is not JSON."
        return
    if not isinstance(parsed, dict):
        yield f"table.resource-policy: Table {name!r} declares a policy that is not a JSON object."
    elif len(policy.encode()) > _MAX_POLICY_BYTES:
        yield f"table.resource-policy: Table {name!r} declares a policy over DynamoDB's 20 KB."


def creation_parts(settings: TableSettings) -> dict[str, Any]:
    """The table-level CreateTable parameters of the declared settings (none when unmanaged).

    Point-in-time recovery is not among them: it is set with UpdateContinuousBackups once the
    table is ACTIVE.
    """
    out: dict[str, Any] = {}
    if settings.on_demand_throughput is not None:
        request = settings.on_demand_throughput.request()
        if request:
            out["OnDemandThroughput"] = request
    if settings.warm_throughput is not None:
        out["WarmThroughput"] = settings.warm_throughput.request()
    if settings.stream:
        out["StreamSpecification"] = {"StreamEnabled": True, "StreamViewType": settings.stream}
    if settings.deletion_protection is not None:
        out["DeletionProtectionEnabled"] = settings.deletion_protection
    if settings.tags:
        out["Tags"] = [{"Key": k, "Value": v} for k, v in settings.tags]
    if settings.resource_policy is not None:
        out["ResourcePolicy"] = settings.resource_policy
    return out


@dataclass(frozen=True)
class LiveSettings:
    """What a live table says of its settings, beyond DescribeTable: None where it was not read
    (the setting is not declared) or could not be (the engine does not know the operation)."""

    continuous_backups: Mapping[str, Any] | None = None
    tags: Mapping[str, str] | None = None
    #: The live policy's JSON text; "" when the table has none.
    resource_policy: str | None = None
    #: The settings whose reads the engine refused as unknown operations: not checked.
    unchecked: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class SettingDrift:
    """One setting that differs: its kind, the index (None: the table) and the message."""

    kind: str
    index: str | None
    message: str


def live_warm(described: Mapping[str, Any]) -> tuple[int | None, int | None] | None:
    """The warm throughput a description reports, or None when it reports none."""
    warm = described.get("WarmThroughput")
    if not isinstance(warm, Mapping):
        return None
    return warm.get("ReadUnitsPerSecond"), warm.get("WriteUnitsPerSecond")


def warm_below(declared: WarmThroughput, live: tuple[int | None, int | None]) -> bool:
    """Whether the live warm throughput is below the declared one (for a declared unit)."""
    pairs = (
        (declared.read_units_per_second, live[0]),
        (declared.write_units_per_second, live[1]),
    )
    return any(want is not None and (have or 0) < want for want, have in pairs)


def live_on_demand(described: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """The on-demand maxima a description reports (None: no maximum, as -1 or absent says)."""
    found = described.get("OnDemandThroughput")
    found = found if isinstance(found, Mapping) else {}

    def unit(name: str) -> int | None:
        value = found.get(name)
        return value if isinstance(value, int) and value >= 1 else None

    return unit("MaxReadRequestUnits"), unit("MaxWriteRequestUnits")


def on_demand_differs(declared: OnDemandThroughput, described: Mapping[str, Any]) -> bool:
    """Whether the live maxima differ from the declared ones."""
    return live_on_demand(described) != (
        declared.max_read_request_units,
        declared.max_write_request_units,
    )


def live_stream(described: Mapping[str, Any]) -> str | Literal[False]:
    """The live stream's view type, or False when no stream is enabled."""
    spec = described.get("StreamSpecification")
    if isinstance(spec, Mapping) and spec.get("StreamEnabled"):
        return str(spec.get("StreamViewType"))
    return False


def live_pitr(backups: Mapping[str, Any]) -> tuple[bool, int | None]:
    """Whether point-in-time recovery is on, and its period, from DescribeContinuousBackups."""
    inner = backups.get("ContinuousBackupsDescription", backups)
    pitr = inner.get("PointInTimeRecoveryDescription") if isinstance(inner, Mapping) else None
    pitr = pitr if isinstance(pitr, Mapping) else {}
    days = pitr.get("RecoveryPeriodInDays")
    return pitr.get("PointInTimeRecoveryStatus") == "ENABLED", days if isinstance(
        days, int
    ) else None


def same_policy(declared: str, live: str) -> bool:
    """Whether two policy documents say the same (compared as parsed JSON)."""
    try:
        return bool(json.loads(declared) == json.loads(live))
    except (TypeError, ValueError):
        return declared == live


def managed_tags(live: Mapping[str, str]) -> dict[str, str]:
    """The live tags a declaration manages: all but AWS's own (``aws:``)."""
    return {k: v for k, v in live.items() if not k.startswith("aws:")}


def settings_drifts(
    settings: TableSettings, name: str, described: Mapping[str, Any], live: LiveSettings
) -> Iterator[SettingDrift]:
    """The table-level settings that differ from the declaration (indexes: `index_drifts`)."""
    yield from _throughput_drifts(settings, name, described)
    stream, have = settings.stream, live_stream(described)
    if stream is not None and have != stream:
        said = f"a {have} stream" if have else "no stream"
        want = f"a {stream} stream" if stream else "no stream"
        yield SettingDrift(
            "stream",
            None,
            f"Table {name!r} has {said} but declares {want}; `lsiorm apply` "
            "changes it (a stream of another view type is disabled, then enabled).",
        )
    protection = settings.deletion_protection
    if protection is not None and bool(described.get("DeletionProtectionEnabled")) != protection:
        yield SettingDrift(
            "deletion-protection",
            None,
            f"Table {name!r} has deletion protection {'off' if protection else 'on'} but "
            f"declares it {'on' if protection else 'off'}; `lsiorm apply` changes it.",
        )
    yield from _pitr_drifts(settings, name, live)
    yield from _tag_drifts(settings, name, live)
    policy = settings.resource_policy
    if policy is not None and live.resource_policy is not None:
        if not live.resource_policy:
            yield SettingDrift(
                "resource-policy", None, f"Table {name!r} has no resource policy but declares one."
            )
        elif not same_policy(policy, live.resource_policy):
            yield SettingDrift(
                "resource-policy",
                None,
                f"Table {name!r} has a resource policy other than the declared one.",
            )


def _throughput_drifts(
    settings: TableSettings, name: str, described: Mapping[str, Any]
) -> Iterator[SettingDrift]:
    warm = settings.warm_throughput
    have = live_warm(described)
    if warm is not None and have is not None and warm_below(warm, have):
        yield SettingDrift(
            "warm-throughput",
            None,
            f"Table {name!r} is warm for {have[0]} reads and {have[1]} writes per second but "
            f"declares {warm.read_units_per_second} and {warm.write_units_per_second}; "
            "`lsiorm apply` raises it.",
        )
    demand = settings.on_demand_throughput
    if demand is not None and on_demand_differs(demand, described):
        reads, writes = live_on_demand(described)
        yield SettingDrift(
            "on-demand-throughput",
            None,
            f"Table {name!r} has on-demand maxima of {reads} reads and {writes} writes per "
            f"second but declares {demand.max_read_request_units} and "
            f"{demand.max_write_request_units} (None: no maximum).",
        )


def _pitr_drifts(settings: TableSettings, name: str, live: LiveSettings) -> Iterator[SettingDrift]:
    want = settings.point_in_time_recovery
    if want is None or live.continuous_backups is None:
        return
    enabled, days = live_pitr(live.continuous_backups)
    if enabled != want:
        yield SettingDrift(
            "point-in-time-recovery",
            None,
            f"Table {name!r} has point-in-time recovery {'on' if enabled else 'off'} but "
            f"declares it {'on' if want else 'off'}; `lsiorm apply` changes it.",
        )
    elif (
        want and settings.recovery_period_days is not None and days != settings.recovery_period_days
    ):
        yield SettingDrift(
            "recovery-period",
            None,
            f"Table {name!r} keeps point-in-time recovery for {days} days but declares "
            f"{settings.recovery_period_days}.",
        )


def _tag_drifts(settings: TableSettings, name: str, live: LiveSettings) -> Iterator[SettingDrift]:
    want = settings.tag_map
    if want is None or live.tags is None:
        return
    have = managed_tags(live.tags)
    if have != want:
        missing = sorted(k for k in want if have.get(k) != want[k])
        extra = sorted(k for k in have if k not in want)
        yield SettingDrift(
            "tags",
            None,
            f"Table {name!r} has tags that differ from its declaration (to set: "
            f"{', '.join(missing) or 'none'}; to remove: {', '.join(extra) or 'none'}).",
        )


def index_drifts(
    name: str,
    index: str,
    warm: WarmThroughput | None,
    on_demand: OnDemandThroughput | None,
    described: Mapping[str, Any],
) -> Iterator[SettingDrift]:
    """A global index's settings that differ from its declaration."""
    have = live_warm(described)
    if warm is not None and have is not None and warm_below(warm, have):
        yield SettingDrift(
            "gsi-warm-throughput",
            index,
            f"The global secondary index {index!r} of table {name!r} is warm for {have[0]} "
            f"reads and {have[1]} writes per second but declares "
            f"{warm.read_units_per_second} and {warm.write_units_per_second}.",
        )
    if on_demand is not None and on_demand_differs(on_demand, described):
        reads, writes = live_on_demand(described)
        yield SettingDrift(
            "gsi-on-demand-throughput",
            index,
            f"The global secondary index {index!r} of table {name!r} has on-demand maxima of "
            f"{reads} reads and {writes} writes but declares "
            f"{on_demand.max_read_request_units} and {on_demand.max_write_request_units}.",
        )

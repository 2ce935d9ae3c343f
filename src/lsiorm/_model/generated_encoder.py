"""Each plain entity class's own item encoder, generated as straight-line source."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, datetime, timezone
from decimal import Decimal
from typing import Any, Final

from pydantic import BaseModel

from lsiorm._model.codec import KeyCodec
from lsiorm._model.codegen import ABSENT, compile_function, indent
from lsiorm._model.entity_meta import EntityMeta, EntityModel, checked_key
from lsiorm._model.field_types import strip_optional
from lsiorm._model.item_writer import ItemWriter
from lsiorm._model.number_codecs import IntCodec
from lsiorm._model.number_text import INT_FAST_LIMIT, int_size
from lsiorm._model.shards import check_shard
from lsiorm._model.template import slot_codec
from lsiorm._model.text_codecs import PlainStrCodec, PrintableStrCodec, StrCodec
from lsiorm._model.time_codecs import DatetimeCodec
from lsiorm._model.wire import (
    MAX_ITEM_BYTES,
    SIZED_ENCODERS,
    AttributeValue,
    to_wire_sized,
    utf8_len,
)
from lsiorm._model.write_checks import check_valid, too_large

_TIMESPECS: Final = {6: "microseconds", 3: "milliseconds", 0: "seconds"}
#: ASCII text the printable style writes as it is: no character from U+0000 to '%'.
_UNESCAPED_ASCII: Final = re.compile("[&-\x7f]*").fullmatch


def _ascii_class(codec: PlainStrCodec) -> str:
    """A pattern of the ASCII texts the codec writes as they are (its terminator excluded)."""
    allowed = [
        chr(code)
        for lo, hi in codec.body_chars()
        for code in range(lo, min(hi, 0x7F) + 1)
        if chr(code) != codec.terminator
    ]
    return "[" + "".join(re.escape(c) for c in allowed) + "]*" if allowed else ""


def _segment_source(
    var: str, value: str, codec: KeyCodec, enc: str, namespace: dict[str, Any]
) -> str:
    """Source that sets ``var`` to ``codec.encode(value)``, inlining the codec's common case.

    Each inlined branch runs only where the codec would return that very text without a check
    failing (an ASCII str with no U+0000/U+0001, or with no character the printable style
    escapes, a plain text's member or ASCII text of its alphabet, an int within its width, a
    UTC datetime at the key precision); anything else calls the codec itself, so results and
    errors match.
    """
    if type(codec) is StrCodec and codec.alphabet is None:
        tail = " + '\\x00'" if codec.terminated else ""
        fast = (
            f"type({value}) is str and {value}.isascii() and '\\x00' not in {value} "
            f"and '\\x01' not in {value}",
            f"{value}{tail}",
        )
    elif type(codec) is PrintableStrCodec and codec.alphabet is None:
        tail = f" + {codec.terminator!r}" if codec.terminator is not None else ""
        namespace[f"{enc}_text"] = _UNESCAPED_ASCII
        fast = (
            f"type({value}) is str and {value}.isascii() and {enc}_text({value}) is not None",
            value + tail,
        )
    elif type(codec) is PlainStrCodec and codec.case is None:
        tail = f" + {codec.terminator!r}" if codec.terminator is not None else ""
        if codec.members is not None:
            # Every member passed the codec's checks when the class was declared; a set display
            # of constants compiles to one frozenset.
            members = ", ".join(repr(m) for m in sorted(codec.members))
            fast = (f"type({value}) is str and {value} in {{{members}}}", value + tail)
        else:
            # ASCII text of the alphabet holds no surrogate, U+10FFFF or terminator.
            namespace[f"{enc}_text"] = re.compile(_ascii_class(codec)).fullmatch
            fast = (
                f"type({value}) is str and {value}.isascii() and {enc}_text({value}) is not None",
                value + tail,
            )
    elif type(codec) is IntCodec:
        fast = (
            f"type({value}) is int and 0 <= {value} < {10**codec.width}",
            f"f'{{{value}:0{codec.width}d}}'",
        )
    elif type(codec) is DatetimeCodec:
        fast = (
            f"type({value}) is datetime and {value}.tzinfo is UTC"
            + (
                f" and not {value}.microsecond % {10 ** (6 - codec.digits)}"
                if codec.digits < 6
                else ""
            ),
            f"{value}.isoformat(timespec={_TIMESPECS[codec.digits]!r})[:-6] + 'Z'",
        )
    else:
        return f"{var} = {enc}({value})"
    return f"if {fast[0]}:\n    {var} = {fast[1]}\nelse:\n    {var} = {enc}({value})"


def _field_source(name: str, attr: str, attr_size: int, annotation: Any) -> str:
    """Source that adds field ``name`` to ``item`` and ``size`` as the generic loop would."""
    base = strip_optional(annotation)
    lines = [
        f"v = values[{name!r}]",
        "if type(v) is str:",
        f"    item[{attr!r}] = {{'S': v}}",
        f"    size += {attr_size} + (len(v) if v.isascii() else utf8_len(v))",
    ]
    if base is datetime:
        lines += [
            "elif type(v) is datetime and v.tzinfo is UTC:",
            "    text = v.isoformat(timespec='microseconds')[:-6] + 'Z'",
            f"    item[{attr!r}] = {{'S': text}}",
            f"    size += {attr_size} + len(text)",
        ]
    elif base is int:
        lines += [
            f"elif type(v) is int and {-INT_FAST_LIMIT} < v < {INT_FAST_LIMIT}:",
            "    text = str(v)",
            f"    item[{attr!r}] = {{'N': text}}",
            f"    size += {attr_size} + int_size(text)",
        ]
    lines += [
        "elif v is not None:",
        "    sized = SIZED.get(type(v))",
        "    av, n = sized(v) if sized is not None else to_wire_sized(v)",
        f"    item[{attr!r}] = av",
        f"    size += {attr_size} + n",
    ]
    return "\n".join(lines)


def generate_encoder(
    writer: ItemWriter,
) -> Callable[[EntityModel], tuple[dict[str, AttributeValue], int] | None] | None:
    """Build one class's encoder as straight-line source, as its item decoder is built.

    It does what `encode_entity`'s general path does for a plain class whose keys are all
    text templates (no field stored under a key's name): the same checks in the same order, the
    same item in the same attribute order, the same size. It returns None where only the
    general path knows the answer (a primary key field is None: that path raises
    key.missing-field), before anything is built.
    """
    meta = writer.meta
    if writer.fields is None or writer.text_keys is None or writer.collide or meta.protected:
        return None
    annotations = {name: info.annotation for name, info in meta.cls.model_fields.items()}
    namespace: dict[str, Any] = {
        "UTC": timezone.utc,
        "datetime": datetime,
        "check_valid": check_valid,
        "check_shard": check_shard,
        "checked_key": checked_key,
        "meta": meta,
        "SIZED": SIZED_ENCODERS,
        "to_wire_sized": to_wire_sized,
        "utf8_len": utf8_len,
        "int_size": int_size,
        "too_large": too_large,
    }
    values_check = validity_source(meta)
    if values_check is None:
        body = ["check_valid(meta, entity)", "values = entity.__dict__"]
    else:
        # Values of exactly the declared plain types are valid without asking Pydantic; any
        # other value (or a missing field) gets check_valid's full validation and its errors.
        body = [
            "values = entity.__dict__",
            "get = values.get",
            f"if not ({values_check}):\n    check_valid(meta, entity)",
        ]
        namespace.update(ABSENT=ABSENT, Decimal=Decimal, date=date, all_str=_all_str)
    for name in writer.shards:
        body.append(f"check_shard(meta, {name!r}, values.get({name!r}))")
    # Keys first (their checks run before any field is converted), one local per attribute.
    key_vars = []
    for n, (attr, parts, primary) in enumerate(writer.text_keys):
        var = f"k{n}"
        key_vars.append((attr, var))
        namespace[f"tpl{n}"] = meta.templates[attr]
        body.append(f"{var} = None")
        texts: list[str] = []
        block: list[str] = []
        depth = 0
        for m, part in enumerate(parts):
            if isinstance(part, str):
                texts.append(repr(part))
                continue
            enc = f"enc{n}_{m}"
            namespace[enc] = part[1]
            pad = "    " * depth
            block.append(f"{pad}p = values.get({part[0]!r})")
            block.append(f"{pad}if p is not None:")
            inner = _segment_source(f"s{m}", "p", _codec_of(meta, attr, m), enc, namespace)
            block.extend(pad + "    " + line for line in inner.split("\n"))
            texts.append(f"s{m}")
            depth += 1
        pad = "    " * depth
        block.append(f"{pad}text = {' + '.join(texts) if texts else repr('')}")
        block.append(f"{pad}if not text or len(text) > 256:")
        block.append(f"{pad}    checked_key(meta, tpl{n}, text)")
        block.append(f"{pad}{var} = text")
        body.extend(block)
        if primary:
            body.append(f"if {var} is None:\n    return None")
    body.append("item = {}\nsize = 0")
    for name, attr, attr_size in writer.fields:
        body.append(_field_source(name, attr, attr_size, annotations[name]))
    for attr, var in key_vars:
        line = (
            f"item[{attr!r}] = {{'S': {var}}}\n"
            f"size += {utf8_len(attr)} + (len({var}) if {var}.isascii() else utf8_len({var}))"
        )
        if not any(a == attr and p for a, _, p in writer.text_keys):
            line = f"if {var} is not None:\n" + indent(line)
        body.append(line)
    type_name, type_attribute = meta.type_name, writer.type_attribute
    if type_attribute is not None:
        body.append(f"item[{type_attribute!r}] = {{'S': {type_name!r}}}")
        body.append(f"size += {utf8_len(type_attribute) + utf8_len(type_name)}")
    body.append(f"if size > {MAX_ITEM_BYTES}:\n    too_large(meta, size)")
    body.append("return item, size")
    source = "def encode(entity):\n" + indent("\n".join(body))
    encode: Callable[[EntityModel], tuple[dict[str, AttributeValue], int] | None] = (
        compile_function(source, "encode", meta.cls.__qualname__, namespace)
    )
    return encode


#: Per plain type, an expression true only for values Pydantic's validation of that type
#: (lax, no constraints) accepts as they are.
_EXACT_CHECKS: Final[dict[Any, str]] = {
    str: "type({v}) is str",
    int: "type({v}) is int",
    bool: "type({v}) is bool",
    float: "type({v}) is float",
    Decimal: "type({v}) is Decimal and {v}.is_finite()",
    datetime: "type({v}) is datetime",
    date: "type({v}) is date",
    list[str]: "type({v}) is list and all_str({v})",
}
#: Model settings that do not change which values validation accepts.
_NEUTRAL_CONFIG: Final = frozenset(
    {
        "extra",
        "validate_by_name",
        "validate_by_alias",
        "populate_by_name",
        "frozen",
        "title",
        "protected_namespaces",
        "use_attribute_docstrings",
        "json_schema_extra",
    }
)


def validity_source(meta: EntityMeta[EntityModel]) -> str | None:
    """An expression over ``get`` (the instance dict's get) that is true only when Pydantic's
    validation of the fields would accept them, or None when no such shortcut is sure.

    Only for classes whose validation depends on nothing but the field types: no validators
    (Entity's own shard filler aside, on a class without shards), no post-init, no settings
    or field metadata (constraints, strictness) that could refuse a value of the right type,
    and fields of the plain types in `_EXACT_CHECKS` (or None where allowed).
    """
    cls = meta.cls
    decorators = cls.__pydantic_decorators__
    if decorators.validators or decorators.field_validators or decorators.root_validators:
        return None
    if set(decorators.model_validators) - {"_fill_shards"} or meta.shard_fields:
        return None
    if cls.__pydantic_post_init__ is not None or set(cls.model_config) - _NEUTRAL_CONFIG:
        return None
    # Entity and EntityModel build no core schema of their own, so the classes up to BaseModel
    # are the ones to look at.
    if any(
        "__get_pydantic_core_schema__" in vars(c)
        for c in cls.__mro__[: cls.__mro__.index(BaseModel)]
    ):
        return None
    checks = []
    for name, info in cls.model_fields.items():
        if info.metadata:
            return None
        annotation = info.annotation
        base = strip_optional(annotation)
        check = _EXACT_CHECKS.get(base)
        if check is None:
            return None
        # A missing field reads as ABSENT, which no check accepts.
        read = f"(v := get({name!r}, ABSENT))"
        if base is not annotation:  # Optional: None is valid too
            test = f"{read} is None or {check.replace('{v}', 'v')}"
        else:
            test = check.replace("{v}", read, 1).replace("{v}", "v")
        checks.append(f"({test})")
    return " and ".join(checks) if checks else "True"


def _all_str(values: list[Any]) -> bool:
    # A plain loop: about twice as fast as all() over a generator for short lists.
    for value in values:  # noqa: SIM110
        if type(value) is not str:
            return False
    return True


def _codec_of(meta: EntityMeta[EntityModel], attr: str, position: int) -> KeyCodec:
    segment = meta.templates[attr].segments[position]
    assert not isinstance(segment, str)
    return slot_codec(segment)

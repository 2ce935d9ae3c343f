"""Each entity class's own item decoder, generated as straight-line source."""

from __future__ import annotations

import typing
from collections.abc import Callable, Mapping
from datetime import date, time
from decimal import Decimal
from typing import Any, Final, TypeVar
from uuid import UUID

from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from lsiorm._model.codegen import ABSENT, compile_function, indent
from lsiorm._model.field_types import strip_optional
from lsiorm._model.number_fit import NumberCheck, check_float, check_int, exact_float
from lsiorm._model.number_text import number_from_text
from lsiorm._model.stored_item import invalid_stored_item
from lsiorm._model.wire import from_wire, item_from_wire

M = TypeVar("M", bound=BaseModel)

_BASE_MODEL_VALIDATE = getattr(BaseModel.model_validate, "__func__", None)


def model_keys(cls: type[BaseModel]) -> dict[str, Any] | None:
    """Return every input key the model reads, with its field annotation, or None.

    None means the model may look at keys beyond its fields (extra keys allowed or forbidden,
    a before/wrap model validator, an overridden ``model_validate``, path aliases), so the whole
    item must be decoded.
    """
    if cls.model_config.get("extra") not in (None, "ignore"):
        return None
    validators = cls.__pydantic_decorators__.model_validators.values()
    if any(v.info.mode in ("before", "wrap") for v in validators):
        return None
    if getattr(cls.model_validate, "__func__", None) is not _BASE_MODEL_VALIDATE:
        return None
    keys: dict[str, Any] = {}
    for name, info in cls.model_fields.items():
        if info.validation_alias is not None and not isinstance(info.validation_alias, str):
            return None
        for key in (name, info.alias, info.validation_alias):
            if key is not None:
                keys.setdefault(key, info.annotation)
    return keys


def _wire_tag(annotation: Any) -> str:
    """Return the wire form a field of this type is expected in; a guess used only for speed."""
    base = strip_optional(annotation)
    if base is bool:
        return "BOOL"
    if typing.get_origin(base) is list and typing.get_args(base) == (str,):
        return "L:S"
    if not isinstance(base, type):
        return ""
    if issubclass(base, int):
        return "N:int"
    if issubclass(base, float):
        return "N:float"
    if issubclass(base, Decimal):
        return "N"
    if issubclass(base, bytes):
        return "B"
    if issubclass(base, (str, date, time, UUID)):
        return "S"
    return ""


# Each template reads the AttributeValue ``av`` of key ``{k}`` into ``out``. Its fast branch
# runs only when ``av`` is exactly the expected one-member AttributeValue, and then gives what
# from_wire would; anything else goes through from_wire itself, so results and errors match.
_DECODE_TEMPLATES: Final[dict[str, str]] = {
    "": "out[{k}] = from_wire(av)",
    "S": """
raw = av.get({tag})
out[{k}] = raw if raw is not None and len(av) == 1 else from_wire(av)
""",
    "N": """
raw = av.get("N")
out[{k}] = number(raw) if type(raw) is str and len(av) == 1 else from_wire(av)
""",
    # Where int() succeeds the text has no ".", "e" or "E", so number() would return the same.
    "N:int": """
raw = av.get("N")
if type(raw) is str and len(av) == 1:
    try:
        out[{k}] = int(raw)
    except ValueError:
        out[{k}] = number(raw)
        {check}
else:
    out[{k}] = from_wire(av)
""",
    # A float field reads the float itself, once it holds the number exactly.
    "N:float": """
raw = av.get("N")
out[{k}] = exact_float(raw, {path}) if type(raw) is str and len(av) == 1 else from_wire(av)
""",
    "L:S": """
raw = av.get("L")
value = string_list(raw) if raw is not None and len(av) == 1 else None
out[{k}] = value if value is not None else from_wire(av)
""",
}


def _string_list(values: Any) -> list[Any] | None:
    """Return the S values of an L of S AttributeValues, or None if it is anything else."""
    if type(values) is not list:
        return None
    out = []
    for av in values:
        if type(av) is not dict or len(av) != 1:
            return None
        text = av.get("S")
        if text is None:
            return None
        out.append(text)
    return out


def _block(key: str, tag: str, numbers: tuple[str, NumberCheck] | None) -> str:
    """Return the source that reads key ``key`` into ``out``, checking its numbers."""
    k = repr(key)
    if numbers is None:
        if tag == "N:float":
            tag = "N"  # a float that may round (LossyFloat)
        template = _DECODE_TEMPLATES["S" if tag in ("S", "B", "BOOL") else tag]
        return template.strip().format(k=k, tag=repr(tag), check="pass", path="")
    path, check = numbers
    if check is check_int and tag == "N:int":
        line = f"check_int(out[{k}], {path!r})"
        return _DECODE_TEMPLATES[tag].strip().format(k=k, check=line)
    if check is check_float and tag == "N:float":
        return _DECODE_TEMPLATES[tag].strip().format(k=k, path=repr(path))
    # Numbers inside a list, dict or model, or a field pydantic reads otherwise.
    return f"out[{k}] = from_wire(av)\nnumbers[{k}][1](out[{k}], {path!r})"


def generate_decoder(
    cls: type[M],
    keys: Mapping[str, Any],
    absent: tuple[str, ...],
    numbers: Mapping[str, tuple[str, NumberCheck]],
    fills: tuple[tuple[str, Callable[[Any], Any]], ...] = (),
) -> Callable[[Mapping[str, Any]], M]:
    """Build ``cls``'s decoder as source, one straight-line block per key of `model_keys`.

    A page of items then pays no per-attribute loop or dispatch. ``absent`` names the stored
    attributes that read as None when missing; ``numbers`` the checks of the keys whose
    numbers must fit their field exactly (`number_fit.field_checks`); ``fills`` the keys whose
    records read their absent attributes as None (`absence.nested_fill`).
    """
    blocks = []
    for key, annotation in keys.items():
        block = _block(key, _wire_tag(annotation), numbers.get(key))
        blocks.append(f"av = get({key!r}, absent)\nif av is not absent:\n{indent(block)}")
    fill_source = (
        indent("for name, fill in fills:\n    if name in out:\n        out[name] = fill(out[name])")
        + "\n"
        if fills
        else ""
    )
    source = f"""
def decode(wire):
    out = {{}}
    get = wire.get
    try:
{indent(chr(10).join(blocks), 2)}
    except (ValueError, TypeError, AttributeError, ArithmeticError):
        # item_from_wire raises the error it would have raised for this item.
        item_from_wire(wire)
        raise
    for name in absent_none:
        if name not in out:
            out[name] = None
{fill_source}    try:
        return cls.__pydantic_validator__.validate_python(out)
    except PydanticValidationError as error:
        raise invalid_stored_item(cls, wire, error) from error
"""
    namespace: dict[str, Any] = {
        "absent": ABSENT,
        "absent_none": absent,
        "cls": cls,
        "PydanticValidationError": PydanticValidationError,
        "invalid_stored_item": invalid_stored_item,
        "from_wire": from_wire,
        "item_from_wire": item_from_wire,
        "number": number_from_text,
        "string_list": _string_list,
        "exact_float": exact_float,
        "check_int": check_int,
        "numbers": numbers,
        "fills": fills,
    }
    decode: Callable[[Mapping[str, Any]], M] = compile_function(
        source, "decode", cls.__qualname__, namespace
    )
    return decode

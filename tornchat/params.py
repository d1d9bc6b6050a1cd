"""Request parameters: from form body and query string into one msgspec Struct per endpoint.

Zulip's API sends strings verbatim and every other type (int, bool, list, object) as JSON text.
A `Params` is built once per endpoint Struct at import; `parse` returns the Struct and the names
of the parameters the endpoint did not use (`ignored_parameters_unsupported`). Error texts are the
API's: "Missing 'x' argument", "x is not valid JSON", "x is not an integer", ...
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Generic, TypeVar

import msgspec

from storage.model.errors import ApiError, missing_argument

S = TypeVar("S", bound=msgspec.Struct)


class Json:
    """Annotated marker: decode this `str` parameter as JSON text (e.g. `topics_policy`)."""


# Parameters every endpoint consumes without declaring them.
ALWAYS_CONSUMED = frozenset({"client"})

_TYPE_WORDS = {
    "int": "an integer",
    "bool": "a boolean",
    "str": "a string",
    "array": "a list",
    "object": "a dict",
    "float": "a float",
    "null": "null",
}
_AT = re.compile(r"^(?P<text>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.DOTALL)
_PATH_PART = re.compile(r"\[(\d+)\]|\.([^.\[]+)|\[\"?([^\]\"]*)\"?\]")


def _path(path: str) -> str:
    """Turn msgspec's `[0].content` into the API's `[0]["content"]`."""
    out = []
    for index, key, quoted in _PATH_PART.findall(path):
        out.append(f"[{index}]" if index else f'["{key or quoted}"]')
    return "".join(out)


def translate_error(var: str, message: str) -> ApiError:
    """Map a msgspec validation message for parameter `var` to the API's error."""
    match = _AT.match(message)
    assert match is not None
    text, where = match.group("text"), var + _path(match.group("path") or "")
    if m := re.match(r"Expected `([a-z]+)[^`]*`, got", text):
        return ApiError(f"{where} is not {_TYPE_WORDS.get(m.group(1), 'valid')}")
    if m := re.match(r"Expected `(int|float)` (>=|>) ", text):
        return ApiError(f"{where} is too small")
    if m := re.match(r"Expected `(int|float)` (<=|<) ", text):
        return ApiError(f"{where} is too large")
    if m := re.match(r"Expected `(str|array)` of length <= (\d+)", text):
        unit = "characters" if m.group(1) == "str" else "items"
        return ApiError(f"{where} is too long (limit: {m.group(2)} {unit})")
    if m := re.match(r"Expected `(str|array)` of length >= (\d+)", text):
        return ApiError(f"{where} cannot be blank" if m.group(2) == "1" else f"{where} is too short.")
    if text.startswith("Expected `str` matching regex"):
        return ApiError(f"{where} has invalid format")
    if text.startswith("Invalid enum value"):
        return ApiError(f"Invalid {where}")
    if m := re.match(r"Object missing required field `([^`]+)`", text):
        return ApiError(f'{where}["{m.group(1)}"] field is missing: Field required')
    if m := re.match(r"Object contains unknown field `([^`]+)`", text):
        return ApiError(f'Argument "{m.group(1)}" at {where}["{m.group(1)}"] is unexpected')
    return ApiError(f"Invalid {where}: Value error, {text}")


def _is_verbatim_string(tp: Any) -> bool:
    """Plain `str` parameters (optionally Annotated or Optional) are taken verbatim, not as JSON."""
    if typing.get_origin(tp) is Annotated:
        base, *meta = typing.get_args(tp)
        if any(m is Json or isinstance(m, Json) for m in meta):
            return False
        return _is_verbatim_string(base)
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(tp) if a is not type(None)]
        return len(members) == 1 and _is_verbatim_string(members[0])
    return tp is str


class _Field:
    # verbatim: the raw text is the value (a `str` parameter); otherwise the text is JSON.
    __slots__ = ("name", "attr", "required", "convert", "verbatim")

    def __init__(self, name: str, attr: str, required: bool, convert: Callable[[str], Any], verbatim: bool) -> None:
        self.name, self.attr, self.required, self.convert = name, attr, required, convert
        self.verbatim = verbatim


def _converter(name: str, tp: Any) -> Callable[[str], Any]:
    if _is_verbatim_string(tp):
        if tp is str or tp == str | None:
            return lambda raw: raw
        convert = _boxed(tp, strict=False)

        def convert_string(raw: str) -> Any:
            try:
                return convert(raw)
            except msgspec.ValidationError as error:
                raise translate_error(name, _unboxed(error)) from None

        return convert_string

    convert = _boxed(tp, strict=True)

    def convert_json(raw: str) -> Any:
        value = decode_json(name, raw)
        overflow = _int64_overflow(value) if _LONG_NUMBER.search(raw) else None
        if overflow is not None:
            raise ApiError(f"{name}{overflow} is too large")
        try:
            return convert(value)
        except msgspec.ValidationError as error:
            raise translate_error(name, _unboxed(error)) from None

    return convert_json


def _boxed(tp: Any, strict: bool) -> Callable[[Any], Any]:
    """msgspec.convert(value, tp) through a one-field Struct: msgspec finds a Struct's type information
    by the class, where a typing object (`Annotated[...] | None`) is hashed anew on every call (2-3 us)."""
    box = msgspec.defstruct("Parameter", [("v", tp)])
    return lambda value: msgspec.convert({"v": value}, box, strict=strict).v


def _unboxed(error: msgspec.ValidationError) -> str:
    """The message msgspec.convert(value, tp) would give: the box's field is not part of the path."""
    return str(error).replace(" - at `$.v", " - at `$", 1)


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
# An integer outside 64 bits has 19 digits or more, in the text as it was sent (JSON has no other spelling).
_LONG_NUMBER = re.compile(r"[0-9]{19}")
# Deepest nesting of lists and objects a JSON parameter may have. Real parameters nest a few
# levels; a deeper value would only be an attack on the recursive code that walks it.
MAX_JSON_DEPTH = 100


def decode_json(name: str, raw: str) -> Any:
    """Decode parameter `name` as JSON nested at most MAX_JSON_DEPTH levels; the API's error otherwise."""
    value = _decode_bounded(name, raw)
    if value is _NOT_JSON:
        raise ApiError(f"{name} is not valid JSON")
    return value


def decode_json_or_text(name: str, raw: str) -> Any:
    """Decode a parameter that is JSON or else plain text (POST /messages' `to`), bounded as decode_json."""
    value = _decode_bounded(name, raw)
    return raw if value is _NOT_JSON else value


_NOT_JSON = object()


def _decode_bounded(name: str, raw: str) -> Any:
    try:
        value = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return _NOT_JSON
    except RecursionError:  # msgspec stops at the interpreter's recursion limit (~1,000 levels)
        raise _too_deep(name) from None
    # Every level opens with a bracket of its own: with few brackets in the text, the walk is not needed.
    if (
        isinstance(value, (list, dict))
        and raw.count("[") + raw.count("{") > MAX_JSON_DEPTH
        and _depth(value) > MAX_JSON_DEPTH
    ):
        raise _too_deep(name)
    return value


def _too_deep(name: str) -> ApiError:
    return ApiError(f"{name} is nested too deeply (limit: {MAX_JSON_DEPTH} levels)")


def _depth(value: Any) -> int:
    """The nesting depth of decoded JSON (a scalar is 0), walked without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, level = stack.pop()
        children = item if isinstance(item, list) else item.values() if isinstance(item, dict) else None
        if children is not None:
            deepest = max(deepest, level + 1)
            stack.extend((child, level + 1) for child in children)
    return deepest


def _int64_overflow(value: Any) -> str | None:
    """Return the path (`""`, `[0]`, `["key"]`) of an integer beyond SQLite's 64 bits, or None.

    Recursive: callers pass values already bounded by MAX_JSON_DEPTH.
    """
    if isinstance(value, int):
        return None if INT64_MIN <= value <= INT64_MAX else ""
    items = enumerate(value) if isinstance(value, list) else value.items() if isinstance(value, dict) else ()
    for key, item in items:
        inner = _int64_overflow(item)
        if inner is not None:
            return (f"[{key}]" if isinstance(key, int) else f'["{key}"]') + inner
    return None


class Params(Generic[S]):
    """The decoder of one endpoint's parameters, built once."""

    def __init__(self, struct: type[S], aliases: Mapping[str, str] | None = None) -> None:
        self.struct = struct
        hints = typing.get_type_hints(struct, include_extras=True)
        self.fields = [
            _Field(
                f.encode_name,
                f.name,
                f.required,
                _converter(f.encode_name, hints[f.name]),
                _is_verbatim_string(hints[f.name]),
            )
            for f in msgspec.structs.fields(struct)
        ]
        # alias name -> canonical name, e.g. {"subject": "topic"}
        self.aliases = dict(aliases or {})
        self.known = frozenset(f.name for f in self.fields) | frozenset(self.aliases) | ALWAYS_CONSUMED

    def parse(self, lookup: Callable[[str], str | None], names: list[str]) -> tuple[S, list[str]]:
        """Decode parameters with lookup(name) -> raw value; return (struct, ignored names)."""
        values: dict[str, Any] = {}
        for field in self.fields:
            raw = lookup(field.name)
            for alias, canonical in self.aliases.items():
                if canonical != field.name:
                    continue
                alias_raw = lookup(alias)
                if alias_raw is not None and raw is not None:
                    raise ApiError(
                        f"Can't decide between '{field.name}' and '{alias}' arguments",
                        "REQUEST_CONFUSING_VAR",
                        data={"var_name1": field.name, "var_name2": alias},
                    )
                if alias_raw is not None:
                    raw = alias_raw
            if raw is None:
                if field.required:
                    raise missing_argument(field.name)
                continue
            values[field.attr] = field.convert(raw)
        try:
            struct = self.struct(**values)
        except (ValueError, TypeError) as error:
            raise ApiError(str(error)) from None
        ignored = sorted({name for name in names if name not in self.known})
        return struct, ignored


class NoParams(msgspec.Struct):
    """For endpoints that take no parameters (everything sent is reported as ignored)."""


NO_PARAMS: Params[NoParams] = Params(NoParams)

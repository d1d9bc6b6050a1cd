"""Poll and to-do widgets: the data a `/poll` or `/todo` message starts with, and the submessages they accept.

Zulip's rules (zerver/lib/widget.py, zerver/lib/validator.py: validate_poll_data, validate_todo_data),
with its error texts. Everything here is a pure function of its arguments; storage/messages/submessages.py
stores and publishes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import msgspec

from storage.model.errors import ApiError

WIDGET_TYPES = ("poll", "todo")
# Option and task indexes clients make: Zulip's MAX_IDX, shared with its web client's widgets.
MAX_IDX = 1000
_TOKENS = re.compile(r"\s+|\n+")
_LIST_MARKER = re.compile(r"(\s*[-*]?\s*)")

Check = Callable[[str, Any], None]


def get_widget_data(content: str) -> tuple[str, dict[str, Any]] | None:
    """Return (widget type, extra data) of a message starting with `/poll` or `/todo`, else None.

    The first line after the command is the question (or the list's title); each further non-empty
    line, without a leading "-" or "*" list marker, is an option (or a task: "task: description").
    """
    first = _TOKENS.split(content)[0]
    if not first.startswith("/") or first[1:] not in WIDGET_TYPES:
        return None
    widget_type = first[1:]
    lines = content.replace(first, "", 1).splitlines()
    title = lines.pop(0).strip() if lines and lines[0] else ""
    items = [item for item in (_LIST_MARKER.sub("", line.strip(), count=1) for line in lines) if item]
    if widget_type == "poll":
        return widget_type, {"question": title, "options": items}
    tasks = []
    for item in items:
        task, _, desc = item.partition(": ")
        tasks.append({"task": task.strip(), "desc": desc.strip()})
    return widget_type, {"task_list_title": title, "tasks": tasks}


# -- Zulip's validators, with their texts -------------------------------------------------------------


def _string(name: str, value: Any) -> None:
    if not isinstance(value, str):
        raise ApiError(f"{name} is not a string")


def _integer(name: str, value: Any) -> None:
    # JSON true and false are not integers here (Python's bool is an int; Zulip's check_int lets them by).
    if not isinstance(value, int) or isinstance(value, bool):
        raise ApiError(f"{name} is not an integer")


def _boolean(name: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise ApiError(f"{name} is not a boolean")


def _one_of(*allowed: int) -> Check:
    def check(name: str, value: Any) -> None:
        _integer(name, value)
        if value not in allowed:
            raise ApiError(f"Invalid {name}")

    return check


def _index(name: str, value: Any) -> None:
    _integer(name, value)
    if value < 0:
        raise ApiError(f"{name} is too small")
    if value > MAX_IDX:
        raise ApiError(f"{name} is too large")


def _only(name: str, data: dict[str, Any], keys: list[tuple[str, Check]]) -> None:
    """Zulip's check_dict_only: each key present and valid, in order, then no other key."""
    for key, check in keys:
        if key not in data:
            raise ApiError(f"{key} key is missing from {name}")
        check(f'{name}["{key}"]', data[key])
    unexpected = [key for key in data if key not in dict(keys)]
    if unexpected:
        raise ApiError(f"Unexpected arguments: {', '.join(unexpected)}")


def _typed(name: str, data: Any) -> str:
    """The `type` of a widget's submessage data (a dict with a string `type`)."""
    if not isinstance(data, dict):
        raise ApiError(f"{name} is not a dict")
    if "type" not in data:
        raise ApiError(f"type key is missing from {name}")
    _string(f'{name}["type"]', data["type"])
    return str(data["type"])


def validate_poll_data(data: Any, is_widget_author: bool) -> None:
    """Raise ApiError unless `data` is a vote, a new option, or (the author's) a new question."""
    name = "poll data"
    kind = _typed(name, data)
    if kind == "vote":
        _only(name, data, [("type", _string), ("key", _string), ("vote", _one_of(1, -1))])
    elif kind == "question":
        if not is_widget_author:
            raise ApiError("You can't edit a question unless you are the author.")
        _only(name, data, [("type", _string), ("question", _string)])
    elif kind == "new_option":
        _only(name, data, [("type", _string), ("option", _string), ("idx", _index)])
    else:
        raise ApiError(f"Unknown type for poll data: {kind}")


def validate_todo_data(data: Any, is_widget_author: bool) -> None:
    """Raise ApiError unless `data` is a new task, a strike, or (the author's) a new title."""
    name = "todo data"
    kind = _typed(name, data)
    if kind == "new_task":
        keys = [("type", _string), ("key", _index), ("task", _string), ("desc", _string), ("completed", _boolean)]
        _only(name, data, keys)
    elif kind == "strike":
        _only(name, data, [("type", _string), ("key", _string)])
    elif kind == "new_task_list_title":
        if not is_widget_author:
            raise ApiError("You can't edit the task list title unless you are the author.")
        _only(name, data, [("type", _string), ("title", _string)])
    else:
        raise ApiError(f"Unknown type for todo data: {kind}")


VALIDATORS: dict[str, Callable[[Any, bool], None]] = {"poll": validate_poll_data, "todo": validate_todo_data}


# -- widget_content: a widget given with the message (Zulip's bots send zform buttons this way) ------------


def _list_of_choices(name: str, value: Any) -> None:
    if not isinstance(value, list):
        raise ApiError(f"{name} is not a list")
    for index, choice in enumerate(value):
        _keys(f"{name}[{index}]", choice, [("short_name", _string), ("long_name", _string), ("reply", _string)])


def _keys(name: str, data: Any, keys: list[tuple[str, Check]]) -> None:
    """Zulip's check_dict: a dict with each key present and valid, in order (other keys allowed)."""
    if not isinstance(data, dict):
        raise ApiError(f"{name} is not a dict")
    for key, check in keys:
        if key not in data:
            raise ApiError(f"{key} key is missing from {name}")
        check(f'{name}["{key}"]', data[key])


def _check_widget_content(widget: Any) -> None:
    """Zulip's check_widget_content: only zform "choices" widgets may be given this way."""
    if not isinstance(widget, dict):
        raise ApiError("widget_content is not a dict")
    for key in ("widget_type", "extra_data"):
        if key not in widget:
            raise ApiError(f"{key} is not in widget_content")
    widget_type, extra_data = widget["widget_type"], widget["extra_data"]
    if not isinstance(extra_data, dict):
        raise ApiError("extra_data is not a dict")
    if widget_type != "zform":
        raise ApiError(f"unknown widget type: {widget_type}")
    if "type" not in extra_data:
        raise ApiError("zform is missing type field")
    if extra_data["type"] != "choices":
        raise ApiError(f"unknown zform type: {extra_data['type']}")
    _keys("extra_data", extra_data, [("heading", _string), ("choices", _list_of_choices)])


def check_widget_content(raw: str) -> tuple[str, Any]:
    """Return (widget type, extra data) of a send's `widget_content` JSON; raise Zulip's "Widgets: ..." errors."""
    try:
        widget = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        raise ApiError("Widgets: API programmer sent invalid JSON content") from None
    try:
        _check_widget_content(widget)
    except ApiError as error:
        raise ApiError(f"Widgets: {error.msg}") from None
    return widget["widget_type"], widget["extra_data"]

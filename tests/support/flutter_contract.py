"""Check JSON from tornchat against the Zulip mobile app's decoders (tests/clients/zulip_flutter_contract.json).

The contract lists, for each type the app decodes, the keys it reads and their JSON types; see the
generator (tests/clients/zulip_flutter_contract.py) for the descriptor language. `problems` returns
what would make the app's decoder throw (a required key absent or null, a value of another JSON type,
an enum value it does not know), as "path: what" strings; an empty list means the app decodes it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

CONTRACT_PATH = Path(__file__).resolve().parents[1] / "clients" / "zulip_flutter_contract.json"
JSON_TYPES = {
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "num": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "string": lambda v: isinstance(v, str),
    "bool": lambda v: isinstance(v, bool),
    "any": lambda v: True,
}


def load_contract() -> dict[str, Any]:
    return json.loads(CONTRACT_PATH.read_text(encoding="utf-8"))


class Checker:
    def __init__(self, contract: dict[str, Any]) -> None:
        self.contract = contract
        self.types = contract["types"]

    def event_decoder(self, event: dict[str, Any]) -> str:
        """The decoder Event.fromJson picks for this event (UnexpectedEvent for types it does not know)."""
        by_type = self.contract["events"].get(event.get("type"))
        if isinstance(by_type, dict):
            return by_type.get(event.get("op"), "UnexpectedEvent")
        return by_type or "UnexpectedEvent"

    def event(self, event: dict[str, Any], path: str = "event") -> list[str]:
        if not isinstance(event.get("type"), str):
            return [f"{path}.type: not a string"]
        by_type = self.contract["events"].get(event["type"])
        if isinstance(by_type, dict) and not isinstance(event.get("op"), str):
            return [f"{path}.op: not a string ({event['type']} events are decoded by op)"]
        return self.typed(self.event_decoder(event), event, path)  # every decoder reads id

    def message(self, message: Any, path: str = "message") -> list[str]:
        if not isinstance(message, dict):
            return [f"{path}: not an object"]
        decoder = self.contract["messages"].get(message.get("type"))
        if decoder is None:
            return [f"{path}.type: {message.get('type')!r}, neither 'stream' nor 'private'"]
        return self.typed(decoder, message, path)

    def typed(self, name: str, value: Any, path: str) -> list[str]:
        """Problems of `value` decoded as the contract type `name`."""
        if name == "Message":
            return self.message(value, path)
        if name == "Event":
            return self.event(value, path) if isinstance(value, dict) else [f"{path}: not an object"]
        if not isinstance(value, dict):
            return [f"{path}: not an object ({name})"]
        found: list[str] = []
        for key, field in self.types[name]["fields"].items():
            found += self.field(name, key, field, value, path)
        found += self.conditional(name, value, path)
        found += self.property_value(name, value, path)
        return found

    def field(self, name: str, key: str, field: dict[str, Any], value: dict[str, Any], path: str) -> list[str]:
        if "hand" in field:
            return self.hand_field(name, field["hand"], value, path)
        container, leaf = value, key
        if "." in key:  # person.user_id: read from a nested object
            outer, leaf = key.split(".", 1)
            container = value.get(outer)
            if not isinstance(container, dict):
                return [] if field["optional"] else [f"{path}.{outer}: not an object"]
        item = value if field.get("whole_object") else container.get(leaf)
        if item is None and "fallback" in field:  # an older server's key, read when the first is absent
            fallback = field["fallback"]
            item = container.get(fallback["key"])
            field = {**field, "type": fallback["type"]}
            key = fallback["key"] if item is not None else key
        if item is None:
            return [] if field["optional"] else [f"{path}.{key}: missing or null ({name})"]
        if field.get("with_event_flags") and isinstance(item, dict):  # the event's flags, put in the message
            item = {**item, "flags": value.get("flags")}
        if "fills" in field and isinstance(item, list):  # keys the app fills in when absent
            item = [{**field["fills"], **element} if isinstance(element, dict) else element for element in item]
        found = self.check(field["type"], item, f"{path}.{key}")
        if "pattern" in field and isinstance(item, str) and not re.match(field["pattern"], item):
            found.append(f"{path}.{key}: {item!r} does not match {field['pattern']}")
        for read_key, descriptor in field.get("reads", {}).items():
            if value.get(read_key) is not None:
                found += self.check(descriptor, value[read_key], f"{path}.{read_key}")
        return found

    def hand_field(self, name: str, helper: str, value: dict[str, Any], path: str) -> list[str]:
        """Keys read by hand-written helpers that take the whole object."""
        if helper == "UserStatusEvent._readChange":
            return self.typed("UserStatusChange", value, path)
        if helper == "UpdateMessageEvent._readMoveData":
            return self.typed("UpdateMessageMoveData", value, path) + self.move_data(value, path)
        return []  # the _readValue helpers: checked in property_value

    @staticmethod
    def move_data(value: dict[str, Any], path: str) -> list[str]:
        """UpdateMessageMoveData.tryParseFromJson: a move needs its three keys; no move, no propagate_mode."""
        new_stream = value.get("new_stream_id", value.get("stream_id"))
        new_topic = value.get("subject", value.get("orig_subject"))
        if new_stream == value.get("stream_id") and new_topic == value.get("orig_subject"):
            return [f"{path}.propagate_mode: present, but nothing moved"] if "propagate_mode" in value else []
        keys = ("stream_id", "orig_subject", "propagate_mode")
        return [f"{path}.{key}: missing or null in a move" for key in keys if value.get(key) is None]

    def conditional(self, name: str, value: dict[str, Any], path: str) -> list[str]:
        found = []
        for key, required in self.contract["conditional"].get(name, {}).items():
            for key_value, keys in required.items():
                if value.get(key) != key_value:
                    continue
                found += [
                    f"{path}.{k}: missing or null when {key} is {key_value!r}" for k in keys if value.get(k) is None
                ]
        return found

    def property_value(self, name: str, value: dict[str, Any], path: str) -> list[str]:
        known = self.contract["property_values"].get(name)
        if known is None:
            return []
        if not isinstance(value.get("property"), str):
            return [f"{path}.property: not a string"]
        descriptor = known.get(value["property"])
        if descriptor is None:
            return []  # a property the app ignores
        return self.check(descriptor, value.get("value"), f"{path}.value ({value['property']})")

    def check(self, descriptor: Any, value: Any, path: str) -> list[str]:
        """Problems of a present value against a type descriptor."""
        if isinstance(descriptor, str):
            return [] if JSON_TYPES[descriptor](value) else [f"{path}: {value!r} is not {descriptor}"]
        if "nullable" in descriptor:
            return [] if value is None else self.check(descriptor["nullable"], value, path)
        if "ref" in descriptor:
            return self.typed(descriptor["ref"], value, path)
        if "enum" in descriptor:
            return [] if value in descriptor["enum"] else [f"{path}: {value!r} not one of {descriptor['enum']}"]
        if "oneof" in descriptor:
            options = [self.check(option, value, path) for option in descriptor["oneof"]]
            return [] if any(not o for o in options) else [f"{path}: {value!r} matches none of {descriptor['oneof']}"]
        if "list" in descriptor:
            if not isinstance(value, list):
                return [f"{path}: {value!r} is not a list"]
            return [p for i, item in enumerate(value) for p in self.check(descriptor["list"], item, f"{path}[{i}]")]
        if "map" in descriptor:
            if not isinstance(value, dict):
                return [f"{path}: {value!r} is not an object"]
            found = [
                f"{path}: key {k!r} is not an int"
                for k in value
                if descriptor.get("int_keys") and not re.fullmatch(r"-?\d+", k)
            ]
            return found + [p for k, v in value.items() for p in self.check(descriptor["map"], v, f"{path}[{k}]")]
        raise ValueError(f"unknown descriptor {descriptor}")

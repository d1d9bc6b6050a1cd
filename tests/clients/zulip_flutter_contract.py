"""Generate tests/clients/zulip_flutter_contract.json from the Zulip mobile app's source.

    python -m tests.clients.zulip_flutter_contract /work/.mirror/zulip+zulip-flutter/repo [--commit HEAD]

The app (zulip/zulip-flutter) decodes the server's JSON with code that json_serializable generates
into lib/api/**/*.g.dart. Each `_$XFromJson` function there is parsed: every key it reads, the JSON
type it casts the key to, and whether the key may be absent (a `?` cast, `?? default`, `== null ? null`,
`$enumDecodeNullable`). Keys read through hand-written helpers (`@JsonKey(readValue: ...)`, custom
`fromJson`) and the hand-written dispatchers (Event.fromJson, Message.fromJson) are encoded in HELPERS
and HAND below, from reading lib/api/model/*.dart; the generator fails on a helper it does not know,
so that a new one in the app is read before the contract is trusted.

Type descriptors in the JSON file: "int", "num", "string", "bool", "any"; {"list": T}, {"map": T}
(a JSON object whose values are T; "int_keys": true when the app parses the keys as ints);
{"ref": "Name"} (another type of the contract); {"enum": [...]} (the app throws on other values);
{"oneof": [T, ...]}; {"nullable": T} (T or null, where a list element or map value may be null).
A field: {"type": T, "optional": bool}; a non-optional key must be present and not null.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

OUTPUT = Path(__file__).with_name("zulip_flutter_contract.json")
FEATURE_LEVEL = 483

# Decoders of what is no JSON from the server's REST API: push notification payloads (FCM data,
# all strings) are the push bouncer's contract, not this one.
NOT_SERVER_JSON = {"lib/api/notifications.g.dart"}
SCALARS = {"int": "int", "num": "num", "double": "num", "String": "string", "bool": "bool", "Object": "any"}
CAST = (
    r" ?as (Map<String\|dynamic>|Map<String\|Object\?>|List<dynamic>|List<Object\?>"
    r"|int|num|double|String|bool|Object)(\?)?"
)

# Hand-written helpers the generated code calls, read from lib/api/model/*.dart.
# "Class._helper": how the key it is given is really read (a path and a type, or None for keys the
# helper reads in a way encoded by HAND instead).
HELPERS: dict[str, Any] = {
    # RealmUserUpdateEvent: every key is read from the nested "person" object.
    "RealmUserUpdateEvent._readFromPerson": "person",
    "RealmUserUpdateEvent._readNullableStringFromPerson": "person",
    # JsonNullable.readFromJson: absent, null and a value are three answers; the value's type is cast.
    "JsonNullable.readIntFromJson": {"type": "int", "optional": True},
    "JsonNullable.readStringFromJson": {"type": "string", "optional": True},
    # Subscription.color / SubscriptionUpdateEvent: "#rrggbb" parsed into an int.
    "Subscription._readColor": {"type": "string", "optional": False, "pattern": "^#[0-9a-f]{6}$"},
    # User.profile_data: an optional object of field id -> ProfileFieldUserData.
    "User._readProfileData": {
        "type": {"map": {"ref": "ProfileFieldUserData"}, "int_keys": True},
        "optional": True,
    },
    # Users in the snapshot: is_active is filled in when absent (true, or false for the non-active
    # list); the list itself must be there.
    "InitialSnapshot._readUsersIsActiveFallbackTrue": {
        "type": {"list": {"ref": "User"}},
        "optional": False,
        "fills": {"is_active": True},
    },
    "InitialSnapshot._readUsersIsActiveFallbackFalse": {
        "type": {"list": {"ref": "User"}},
        "optional": False,
        "fills": {"is_active": False},
    },
    # stream_ids, or (older servers) streams[].stream_id.
    "ChannelDeleteEvent._readChannelIds": {
        "type": {"list": "int"},
        "optional": False,
        "key": "stream_ids",
        "fallback": {"key": "streams", "type": {"list": {"ref": "ChannelIdItem"}}},
    },
    # subscriptions[].stream_id.
    "SubscriptionRemoveEvent._readChannelIds": {
        "type": {"list": {"ref": "ChannelIdItem"}},
        "optional": False,
        "key": "subscriptions",
    },
    # Values checked against their property: encoded in HAND (property_values).
    "UserSettingsUpdateEvent._readValue": None,
    "ChannelUpdateEvent._readValue": None,
    "SubscriptionUpdateEvent._readValue": None,
    # Read from the event object itself (keys of UserStatusChange / UpdateMessageMoveData), see HAND.
    "UserStatusEvent._readChange": None,
    "UpdateMessageEvent._readMoveData": None,
    # The message object of a message event with the event's own "flags" added in.
    "MessageEvent._readMessageValue": {"type": {"ref": "Message"}, "optional": False, "with_event_flags": True},
    # edit_history (optional list) and last_edit_timestamp (optional int), both read by the decoder too.
    "MessageEditState._readFromMessage": {
        "type": "any",
        "optional": True,
        "reads": {"edit_history": {"list": {"ref": "MessageEditHistoryEntry"}}, "last_edit_timestamp": "int"},
    },
    "Message._reactionsFromJson": {"type": {"list": {"ref": "Reaction"}}, "optional": False},
    "Message._flagsFromJson": {"type": {"list": "string"}, "optional": False},
    "Message._readPoll": {"type": {"list": {"ref": "Submessage"}}, "optional": True},
    "GetMessagesResult._messagesFromJson": {"type": {"list": {"ref": "Message"}}, "optional": False},
    # The message object itself, decoded as a StreamConversation.
    "StreamMessage._readConversation": {"type": {"ref": "StreamConversation"}, "optional": False, "whole_object": True},
    "DmMessage._conversationFromJson": {"type": {"list": {"ref": "DmRecipient"}}, "optional": False},
    "TypingEvent._readSenderId": {"type": {"ref": "TypingSender"}, "optional": False, "key": "sender"},
    "TypingEvent._recipientIdsFromJson": {"type": {"list": {"ref": "TypingPerson"}}, "optional": True},
    "MessageTypeConverter": {"type": {"enum": ["stream", "private", "direct"]}, "optional": False},
}

# Requirements no generated decoder states, encoded by hand from lib/api/model/*.dart.
HAND: dict[str, Any] = {
    "types": {
        # Event.fromJson's fallback: any event it does not decode is kept as it came, with its id.
        "UnexpectedEvent": {"id": {"type": "int", "optional": False}, "type": {"type": "string", "optional": False}},
        # RealmUserRemoveEvent.fromJson (hand-written): person.user_id.
        "RealmUserRemoveEvent": {
            "id": {"type": "int", "optional": False},
            "person": {"type": {"ref": "RealmUserRemovePerson"}, "optional": False},
        },
        "RealmUserRemovePerson": {"user_id": {"type": "int", "optional": False}},
        # UserStatusChange.fromJson (hand-written): three optional strings and status_text.
        "UserStatusChange": {
            key: {"type": "string", "optional": True}
            for key in ("status_text", "emoji_name", "emoji_code", "reaction_type")
        },
        # MessageEditState._readFromMessage reads these keys of each edit_history entry.
        "MessageEditHistoryEntry": {
            "prev_topic": {"type": "string", "optional": True},
            "topic": {"type": "string", "optional": True},
        },
        # DmMessage._conversationFromJson: display_recipient[].id, `(x as num).toInt()`.
        "DmRecipient": {"id": {"type": "num", "optional": False}},
        # TypingEvent: sender.user_id and recipients[].user_id (`as int`).
        "TypingPerson": {"user_id": {"type": "int", "optional": False}},
        "TypingSender": {"user_id": {"type": "num", "optional": False}},  # `(x as num).toInt()`
        # ChannelDeleteEvent (older servers) streams[] and SubscriptionRemoveEvent subscriptions[]: `as int`.
        "ChannelIdItem": {"stream_id": {"type": "int", "optional": False}},
        # Reactions.fromJson reads each reaction with Reaction.fromJson (reaction.g.dart), kept as generated.
        # UpdateMessageMoveData.tryParseFromJson: the move keys; a move (new_stream_id or subject
        # differing) needs stream_id, orig_subject and propagate_mode, and propagate_mode without a
        # move throws: checked by tests/support/flutter_contract.py (move_data).
        "UpdateMessageMoveData": {
            "stream_id": {"type": "num", "optional": True},
            "new_stream_id": {"type": "num", "optional": True},
            "orig_subject": {"type": "string", "optional": True},
            "subject": {"type": "string", "optional": True},
            "propagate_mode": {"type": {"enum": ["change_one", "change_later", "change_all"]}, "optional": True},
        },
    },
    # Fields the app checks after decoding ("crunchy-shell validation") when another field has a value.
    "conditional": {
        "DeleteMessageEvent": {"message_type": {"stream": ["stream_id", "topic"]}},
        "TypingEvent": {"message_type": {"stream": ["stream_id", "topic"], "private": ["recipients"]}},
        "UpdateMessageFlagsMessageDetail": {"type": {"stream": ["stream_id", "topic"], "private": ["user_ids"]}},
        "UpdateMessageFlagsRemoveEvent": {"flag": {"read": ["message_details"]}},
    },
    # The _readValue helpers: the JSON type of "value" for each property the app knows; others ignored.
    "property_values": {
        "UserSettingsUpdateEvent": {
            "twenty_four_hour_time": {"nullable": "bool"},
            "starred_message_counts": "bool",
            "display_emoji_reaction_users": "bool",
            "emojiset": "string",
            "web_inbox_show_channel_folders": "bool",
            "presence_enabled": "bool",
        },
        "ChannelUpdateEvent": {
            "name": "string",
            "is_archived": "bool",
            "description": "string",
            "first_message_id": {"nullable": "int"},
            "invite_only": "bool",
            "message_retention_days": {"nullable": "int"},
            "topics_policy": "string",
            "stream_post_policy": "int",
            "folder_id": {"nullable": "int"},
            "can_add_subscribers_group": {"oneof": ["int", {"ref": "GroupSettingValueNameless"}]},
            "can_delete_any_message_group": {"oneof": ["int", {"ref": "GroupSettingValueNameless"}]},
            "can_delete_own_message_group": {"oneof": ["int", {"ref": "GroupSettingValueNameless"}]},
            "can_send_message_group": {"oneof": ["int", {"ref": "GroupSettingValueNameless"}]},
            "can_subscribe_group": {"oneof": ["int", {"ref": "GroupSettingValueNameless"}]},
            "is_recently_active": "bool",
            "stream_weekly_traffic": {"nullable": "int"},
        },
        "SubscriptionUpdateEvent": {
            "color": "string",  # "#rrggbb"
            "is_muted": "bool",
            "pin_to_top": "bool",
            "desktop_notifications": "bool",
            "audible_notifications": "bool",
            "push_notifications": "bool",
            "email_notifications": "bool",
            "wildcard_mentions_notify": "bool",
        },
    },
    # Message.fromJson (hand-written): by "type".
    "messages": {"stream": "StreamMessage", "private": "DmMessage"},
}


def git_show(repo: str, commit: str, path: str) -> str:
    return subprocess.run(
        ["git", "-C", repo, "show", f"{commit}:{path}"], check=True, capture_output=True, text=True
    ).stdout


def git_files(repo: str, commit: str, prefix: str) -> list[str]:
    out = subprocess.run(
        ["git", "-C", repo, "ls-tree", "-r", "--name-only", commit, prefix], check=True, capture_output=True, text=True
    ).stdout
    return out.split()


def compact(code: str) -> str:
    """Code with whitespace removed around punctuation, so one regex fits every line layout."""
    code = re.sub(r"\s+", " ", code)
    code = re.sub(r"\s*([()\[\].,:?{}=<>])\s*", r"\1", code)
    code = code.replace("==null?null:", " ==null?null:")
    # Commas inside type arguments would split argument lists: spell them otherwise.
    code = code.replace("<String,dynamic>", "<String|dynamic>").replace("<String,Object?>", "<String|Object?>")
    code = re.sub(r"_\$JsonConverterFromJson<[^(]*>\(", "_$JsonConverterFromJson(", code)
    return code.replace(",)", ")")


def balanced(text: str, start: int) -> int:
    """Index just past the bracket closing the one at text[start]."""
    depth = 0
    quote = ""
    for i in range(start, len(text)):
        c = text[i]
        if quote:
            if c == quote:
                quote = ""
            continue
        if c in "'\"":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return i + 1
    raise ValueError(f"unbalanced: {text[start : start + 80]}")


def split_top(text: str, sep: str = ",") -> list[str]:
    parts, depth, start, quote = [], 0, 0, ""
    for i, c in enumerate(text):
        if quote:
            if c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if text[start:]:
        parts.append(text[start:])
    return parts


def enum_maps(source: str) -> dict[str, list[Any]]:
    found = {}
    for match in re.finditer(r"const _\$(\w+)EnumMap = \{(.*?)\};", source, re.S):
        values = re.findall(r":\s*('[^']*'|-?\d+|null)\s*(?:,|$)", match.group(2).strip())
        found[match.group(1)] = [v.strip("'") if v.startswith("'") else int(v) for v in values if v != "null"]
    return found


class Parser:
    def __init__(self, enums: dict[str, list[Any]]) -> None:
        self.enums = enums

    def value(self, expr: str, var: str) -> tuple[Any, bool]:
        """(type descriptor, optional) of `expr`, which decodes the JSON value `var`."""
        optional = False
        if expr.startswith(var + " ==null?null:"):
            expr, optional = expr[len(var) + len(" ==null?null:") :], True
        parts = split_top(expr, "?")
        if "??" in expr and len(parts) > 1:
            expr, optional = expr[: expr.index("??")], True
        enum_pattern = r"\$enumDecode(Nullable)?\(_\$(\w+)EnumMap,"
        enum = re.match(enum_pattern + re.escape(var) + r"(,unknownValue:([\w.]+))?\)", expr)
        if enum:
            values = self.enums[enum.group(2)]
            kind = "int" if all(isinstance(v, int) for v in values) else "string"
            descriptor = kind if enum.group(4) else {"enum": values}
            return descriptor, optional or bool(enum.group(1))
        nullable_converter = re.fullmatch(
            r"_\$JsonConverterFromJson\(" + re.escape(var) + r",const"
            r" Nullable(Int|String)JsonConverter\(\)\.fromJson\)",
            expr,
        )
        if nullable_converter:  # JsonNullable: absent, null or the value
            return nullable_converter.group(1).lower(), True
        cast = re.search(re.escape(var) + CAST, expr)
        if cast is None:
            ref = re.fullmatch(r"(\w+)\.fromJson\(" + re.escape(var) + r"\)", expr)
            if ref and ref.group(1) == "GroupSettingValue":
                return {"oneof": ["int", {"ref": "GroupSettingValueNameless"}]}, optional
            raise ValueError(f"no cast of {var} in {expr}")
        base, nullable = cast.group(1), bool(cast.group(2))
        optional = optional or nullable
        after = expr[cast.end() :]
        if base.startswith("List"):
            inner = re.match(r"\)\??\.map\(\((\w+)\)=>", after)
            if inner is None:
                return {"list": "any"}, optional
            start = cast.end() + inner.end()
            end = balanced(expr, cast.end() + after.index(".map(") + 4) - 1
            element, element_optional = self.value(expr[start:end], inner.group(1))
            return {"list": self.nullable(element, element_optional)}, optional
        if base.startswith("Map"):
            entries = re.match(r"\)\??\.map\(\((\w+),(\w+)\)=>MapEntry\(", after)
            before = expr[: cast.start()]
            wrapper = re.search(r"(\w+)\.fromJson\($", before)
            if wrapper:
                return {"ref": wrapper.group(1)}, optional
            if entries is None:
                return {"map": "any"}, optional
            open_at = cast.end() + entries.end() - 1
            key_expr, value_expr = split_top(expr[open_at + 1 : balanced(expr, open_at) - 1])
            element, element_optional = self.value(value_expr, entries.group(2))
            descriptor = {"map": self.nullable(element, element_optional)}
            if key_expr.startswith("int.parse("):
                descriptor["int_keys"] = True
            return descriptor, optional
        return SCALARS[base], optional  # (x as num).toInt() takes a float too: "num"

    @staticmethod
    def nullable(descriptor: Any, optional: bool) -> Any:
        return {"nullable": descriptor} if optional else descriptor


def parse_field(parser: Parser, name: str, expr: str) -> tuple[str, dict[str, Any]]:
    """(JSON key, field) of one constructor argument."""
    checked = re.fullmatch(r"\$checkedConvert\('(\w+)',\((\w+)\)=>(.*)\)", expr)
    if checked:  # json_serializable's checked mode: the value is handed to a closure as `v`
        descriptor, optional = parser.value(checked.group(3), checked.group(2))
        return checked.group(1), {"type": descriptor, "optional": optional}
    helper = re.search(r"([\w$]+\.\w+)\(json,'(\w+)'\)", expr)
    custom = re.search(r"(\w+\._\w+)\(json\['(\w+)'\]", expr)
    converter = re.search(r"const (\w+Converter)\(\)\.fromJson\(json\['(\w+)'\]", expr)
    plain = re.search(r"json\['(\w+)'\]", expr)
    if helper:
        rule = HELPERS[helper.group(1)]  # KeyError: a helper nobody has read yet
        key = helper.group(2)
        if rule == "person":
            # The same cast as a plain read, applied to json['person'][key].
            descriptor, optional = parser.value(expr.replace(helper.group(0), "json['x']"), "json['x']")
            return f"person.{key}", {"type": descriptor, "optional": optional}
        if rule is None:
            return key, {"hand": helper.group(1)}
        field = dict(rule)
        return field.pop("key", key), field
    for match, rule_name in ((custom, 1), (converter, 1)):
        if match:
            field = dict(HELPERS[match.group(rule_name)])
            return match.group(2), field
    if plain is None:
        raise ValueError(f"{name}: no key in {expr}")
    descriptor, optional = parser.value(expr, f"json['{plain.group(1)}']")
    return plain.group(1), {"type": descriptor, "optional": optional}


def parse_decoders(source: str, parser: Parser) -> dict[str, dict[str, Any]]:
    code = compact(source)
    types: dict[str, dict[str, Any]] = {}
    head = r"(\w+) _\$(\w+)FromJson\(Map<String\|(?:dynamic|Object\?)>json\)"
    # `=> X(...)`; a block that first checks keys (`$checkKeys(json, requiredKeys: ...)`) then returns
    # X(...); or checked mode's `=> $checkedCreate('X', json, ($checkedConvert) { final val = X(...`.
    checked = r"(?:\$checkedCreate\('\w+',json,\(\$checkedConvert\)\{(\$checkKeys\(.*?\);)? ?final val=)?"
    pattern = head + r"(?:=>" + checked + r"|\{(\$checkKeys\(.*?\);) ?return )(?:\w+\.)?(\w+)\("
    for match in re.finditer(pattern, code):
        open_at = match.end() - 1
        close = balanced(code, open_at)
        arguments = split_top(code[open_at + 1 : close - 1])
        cascade = code[close : code.index(";", close)]
        arguments += [c.replace("=", ":", 1) for c in cascade.split("..")[1:]]
        fields: dict[str, Any] = {}
        for argument in arguments:
            named = re.match(r"(\w+):(?!:)", argument)
            name, expr = (named.group(1), argument[named.end() :]) if named else ("", argument)
            key, field = parse_field(parser, name, expr)
            fields[key] = field
        required = re.search(r"requiredKeys:const\[([^\]]*)\]", match.group(3) or match.group(4) or "")
        for key in re.findall(r"'(\w+)'", required.group(1) if required else ""):
            fields[key]["optional"] = False  # $checkKeys: present, and (disallowNullValues) not null
        types[match.group(2)] = fields
    return types


def parse_events(source: str) -> dict[str, Any]:
    """Event.fromJson's dispatch: type -> decoder, or type -> {op -> decoder}."""
    body = source[source.index("factory Event.fromJson") :]
    body = body[: body.index("\n  Map<String, dynamic> toJson();")]
    events: dict[str, Any] = {}
    current = None
    for line in body.splitlines():
        direct = re.match(r"\s*case '(\w+)': return (\w+)\.fromJson", line)
        by_op = re.match(r"\s*case '(\w+)':\s*$", line)
        op = re.match(r"\s*case '(\w+)': return (\w+)\.fromJson", line)
        if by_op:
            current = by_op.group(1)
            events[current] = {}
        elif direct and current is not None and re.match(r"\s{10}", line):
            events[current][op.group(1)] = op.group(2)
        elif direct:
            events[direct.group(1)] = direct.group(2)
            current = None
        elif "default:" in line and current is not None and re.match(r"\s{10}", line):
            current = None
    return events


def generate(repo: str, commit: str) -> dict[str, Any]:
    sha = subprocess.run(["git", "-C", repo, "rev-parse", commit], check=True, capture_output=True, text=True)
    sha_text = sha.stdout.strip()
    sources = {path: git_show(repo, sha_text, path) for path in git_files(repo, sha_text, "lib/api")}
    enums: dict[str, list[Any]] = {}
    for path, text in sources.items():
        if path.endswith(".g.dart"):
            enums.update(enum_maps(text))
    parser = Parser(enums)
    types: dict[str, Any] = {}
    for path in sorted(sources):
        if path.endswith(".g.dart") and path not in NOT_SERVER_JSON:
            for name, fields in parse_decoders(sources[path], parser).items():
                types[name] = {"source": path, "fields": fields}
    for name, fields in HAND["types"].items():
        types[name] = {"source": "hand", "fields": fields}
    return {
        "app": "zulip/zulip-flutter",
        "commit": sha_text,
        "feature_level": FEATURE_LEVEL,
        "generated_by": "python -m tests.clients.zulip_flutter_contract <mirror>",
        "events": parse_events(sources["lib/api/model/events.dart"]),
        "messages": HAND["messages"],
        "conditional": HAND["conditional"],
        "property_values": HAND["property_values"],
        "types": types,
    }


def main(argv: list[str] | None = None) -> None:
    arguments = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    arguments.add_argument("repo", help="a clone (bare is fine) of zulip/zulip-flutter")
    arguments.add_argument("--commit", default="HEAD")
    arguments.add_argument("--output", default=str(OUTPUT))
    options = arguments.parse_args(argv)
    contract = generate(options.repo, options.commit)
    Path(options.output).write_text(json.dumps(contract, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{options.output}: {len(contract['types'])} types from {contract['commit']}", file=sys.stderr)


if __name__ == "__main__":
    main()

"""The contract generator (tests/clients/zulip_flutter_contract.py) on each pattern of json_serializable's
generated code, written out here: no clone of the app needed."""

from __future__ import annotations

import pytest

from tests.clients.zulip_flutter_contract import Parser, enum_maps, parse_decoders, parse_events

GENERATED = r"""
Sample _$SampleFromJson(Map<String, dynamic> json) => Sample(
  id: (json['id'] as num).toInt(),
  name: json['name'] as String,
  note: json['note'] as String?,
  ratio: (json['ratio'] as num?)?.toDouble(),
  wait: (json['wait'] as num?)?.toInt() ?? 15000,
  flag: json['flag'] as bool? ?? true,
  tags: (json['tags'] as List<dynamic>).map((e) => e as String).toList(),
  ids: (json['ids'] as List<dynamic>?)?.map((e) => (e as num).toInt()).toList(),
  byUser: (json['by_user'] as Map<String, dynamic>).map(
    (k, e) => MapEntry(int.parse(k), Other.fromJson(e as Map<String, dynamic>)),
  ),
  other: Other.fromJson(json['other'] as Map<String, dynamic>),
  topic: TopicName.fromJson(json['topic'] as String),
  icon: Uri.parse(json['icon'] as String),
  group: json['group'] == null ? null : GroupSettingValue.fromJson(json['group']),
  policy: $enumDecode(_$PolicyEnumMap, json['policy']),
  emojiset: $enumDecode(_$EmojisetEnumMap, json['emojiset'], unknownValue: Emojiset.unknown),
  maybe: $enumDecodeNullable(_$PolicyEnumMap, json['maybe']),
)..poll = json['poll'] as Map<String, dynamic>?;

const _$PolicyEnumMap = {Policy.everyone: 1, Policy.admins: 2};

const _$EmojisetEnumMap = {
  Emojiset.google: 'google',
  Emojiset.unknown: 'unknown',
};

Other _$OtherFromJson(Map<String, dynamic> json) {
  $checkKeys(json, requiredKeys: const ['label'], disallowNullValues: const ['label']);
  return Other((json['n'] as num).toInt(), label: json['label'] as String?);
}
"""


def parse(source: str) -> dict:
    return parse_decoders(source, Parser(enum_maps(source)))


def test_each_generated_pattern():
    sample = parse(GENERATED)["Sample"]
    assert {key: (field["type"], field["optional"]) for key, field in sample.items()} == {
        "id": ("num", False),  # (x as num).toInt() takes a float too
        "name": ("string", False),
        "note": ("string", True),
        "ratio": ("num", True),
        "wait": ("num", True),  # a default: may be absent
        "flag": ("bool", True),
        "tags": ({"list": "string"}, False),
        "ids": ({"list": "num"}, True),
        "by_user": ({"map": {"ref": "Other"}, "int_keys": True}, False),
        "other": ({"ref": "Other"}, False),
        "topic": ("string", False),
        "icon": ("string", False),
        "group": ({"oneof": ["int", {"ref": "GroupSettingValueNameless"}]}, True),
        "policy": ({"enum": [1, 2]}, False),
        "emojiset": ("string", False),  # an unknown value is kept: any string
        "maybe": ({"enum": [1, 2]}, True),
        "poll": ({"map": "any"}, True),
    }


def test_check_keys_makes_a_key_required():
    other = parse(GENERATED)["Other"]
    assert other == {"n": {"type": "num", "optional": False}, "label": {"type": "string", "optional": False}}


def test_checked_mode():
    source = r"""
Thing _$ThingFromJson(Map<String, dynamic> json) => $checkedCreate('Thing', json, ($checkedConvert) {
  final val = Thing(
    a: $checkedConvert('a', (v) => (v as num).toInt()),
    b: $checkedConvert('b', (v) => (v as List<dynamic>?)?.map((e) => e as bool).toList()),
  );
  return val;
});
"""
    assert parse(source)["Thing"] == {
        "a": {"type": "num", "optional": False},
        "b": {"type": {"list": "bool"}, "optional": True},
    }


def test_read_value_helpers():
    source = r"""
RealmUserUpdateEvent _$RealmUserUpdateEventFromJson(Map<String, dynamic> json) => RealmUserUpdateEvent(
  userId: (RealmUserUpdateEvent._readFromPerson(json, 'user_id') as num).toInt(),
  fullName: RealmUserUpdateEvent._readFromPerson(json, 'full_name') as String?,
  color: (Subscription._readColor(json, 'color') as num).toInt(),
);
"""
    assert parse(source)["RealmUserUpdateEvent"] == {
        "person.user_id": {"type": "num", "optional": False},
        "person.full_name": {"type": "string", "optional": True},
        "color": {"type": "string", "optional": False, "pattern": "^#[0-9a-f]{6}$"},
    }


def test_a_helper_nobody_has_read_stops_the_generator():
    source = r"""
Odd _$OddFromJson(Map<String, dynamic> json) => Odd(x: Odd._readSomehow(json, 'x') as int);
"""
    with pytest.raises(KeyError, match="Odd._readSomehow"):
        parse(source)


def test_event_dispatch():
    source = """
  factory Event.fromJson(Map<String, dynamic> json) {
    switch (json['type'] as String) {
      case 'alert_words': return AlertWordsEvent.fromJson(json);
      case 'stream':
        switch (json['op'] as String) {
          case 'create': return ChannelCreateEvent.fromJson(json);
          default: return UnexpectedEvent.fromJson(json);
        }
      case 'heartbeat': return HeartbeatEvent.fromJson(json);
      default: return UnexpectedEvent.fromJson(json);
    }
  }

  Map<String, dynamic> toJson();
"""
    assert parse_events(source) == {
        "alert_words": "AlertWordsEvent",
        "stream": {"create": "ChannelCreateEvent"},
        "heartbeat": "HeartbeatEvent",
    }

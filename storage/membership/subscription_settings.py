"""Personal subscription settings: PATCH /users/me/subscriptions/{id} and the bulk form."""

from __future__ import annotations

from typing import Any

import msgspec

from storage.channels.channels import access_channel_by_id, is_subscribed
from storage.db.tx import Tx
from storage.membership.subscriptions import COLOR, NOTIFICATION_SETTINGS
from storage.model.channel import Channel
from storage.model.errors import ApiError
from storage.model.user import User

BOOLEAN_PROPERTIES = ("is_muted", "in_home_view", "pin_to_top") + NOTIFICATION_SETTINGS
PROPERTIES = ("color",) + BOOLEAN_PROPERTIES


def check_property_value(property: str, value: Any) -> Any:
    """Return the value to store for a subscription property.

    Raises ApiError, or ValueError for a bad colour (the bulk form reports it as a value error of
    its entry, "Invalid subscription_data[i]: Value error, ...").
    """
    if property == "color":
        if not isinstance(value, str) or not COLOR.fullmatch(value):
            raise ValueError("color is not a valid hex color code")
        return value
    if property not in BOOLEAN_PROPERTIES:
        raise ApiError(f"Unknown subscription property: {property}")
    # null for a notification setting means "inherit the user's default" again.
    if isinstance(value, bool) or (value is None and property in NOTIFICATION_SETTINGS):
        return value
    raise ApiError(f"{property} is not a boolean")


class PropertyChange(msgspec.Struct):
    """An element of `subscription_data`: one property of one of the user's subscriptions."""

    stream_id: int
    property: str
    value: bool | str | None

    def __post_init__(self) -> None:
        self.value = check_property_value(self.property, self.value)


def property_change(stream_id: int, property: str, text: str) -> PropertyChange:
    """Return the change PATCH /users/me/subscriptions/{id} asks for.

    `value` is a JSON bool (or null) when it parses as one, otherwise the text itself.
    """
    try:
        decoded = msgspec.json.decode(text)
    except (msgspec.DecodeError, RecursionError):  # only a JSON bool or null matters here
        decoded = text
    try:
        return PropertyChange(stream_id, property, decoded if decoded is None or isinstance(decoded, bool) else text)
    except ValueError as error:
        raise ApiError(str(error)) from None


def update_subscription_properties(tx: Tx, user: User, changes: list[PropertyChange]) -> None:
    """Apply the changes in order, each with its subscription/update event(s); all or nothing."""
    for change in changes:
        channel = access_channel_by_id(tx, user, change.stream_id, require_content=True)
        if channel.is_archived:
            raise ApiError("Invalid channel ID")
        if not is_subscribed(tx, user.id, channel.id):
            raise ApiError(f"Not subscribed to channel ID {change.stream_id}")
        if change.property in ("is_muted", "in_home_view"):
            muted = change.value if change.property == "is_muted" else not change.value
            _set_property(tx, user, channel, "is_muted", muted)
            # Clients of both generations listen: the legacy in_home_view first, then is_muted.
            _publish_update(tx, user, channel, "in_home_view", not muted)
            _publish_update(tx, user, channel, "is_muted", muted)
        else:
            _set_property(tx, user, channel, change.property, change.value)
            _publish_update(tx, user, channel, change.property, change.value)


def _set_property(tx: Tx, user: User, channel: Channel, column: str, value: Any) -> None:
    assert column in PROPERTIES  # a column name from the fixed list, never from the request
    tx.execute(
        f"UPDATE subscriptions SET {column} = ? WHERE user_id = ? AND channel_id = ?", (value, user.id, channel.id)
    )


def _publish_update(tx: Tx, user: User, channel: Channel, property: str, value: Any) -> None:
    event = {"type": "subscription", "op": "update", "property": property, "value": value, "stream_id": channel.id}
    tx.publish(event, [user.id])

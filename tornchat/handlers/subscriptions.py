"""The user's own subscriptions: list, subscribe (creating channels), unsubscribe, personal settings."""

from __future__ import annotations

import msgspec
import tornado.web

from storage.membership import subscription_settings, subscriptions
from storage.model.errors import ApiError
from tornchat.base import ID, BaseHandler
from tornchat.handlers.channels import ChannelSettingsParams
from tornchat.params import Params


class ListSubscriptions(msgspec.Struct):
    include_subscribers: str = "false"  # "true", "false" or "partial": a plain string, not JSON


class Subscribe(ChannelSettingsParams, kw_only=True):
    subscriptions: list[subscriptions.NewSubscription]
    principals: list[str | int] | None = None
    authorization_errors_fatal: bool = True
    send_new_subscription_messages: bool = True


class Unsubscribe(msgspec.Struct):
    subscriptions: list[str]
    principals: list[str | int] | None = None


class UpdateSubscriptionProperty(msgspec.Struct):
    property: str
    value: str  # raw: a JSON bool when it parses as one, otherwise the text (a colour)


class UpdateSubscriptionProperties(msgspec.Struct):
    subscription_data: list[subscription_settings.PropertyChange]


LIST_SUBSCRIPTIONS = Params(ListSubscriptions)
SUBSCRIBE = Params(Subscribe)
UNSUBSCRIBE = Params(Unsubscribe)
UPDATE_PROPERTY = Params(UpdateSubscriptionProperty)
UPDATE_PROPERTIES = Params(UpdateSubscriptionProperties)


class SubscriptionsHandler(BaseHandler):
    params = {"get": LIST_SUBSCRIPTIONS, "post": SUBSCRIBE, "delete": UNSUBSCRIBE}

    def get(self) -> None:
        p = self.parse()
        found = self.server.db.read(subscriptions.list_subscriptions, self.user, p.include_subscribers)
        self.respond({"subscriptions": found})

    def post(self) -> None:
        # Guests are refused before their parameters are read, as Zulip's decorator does.
        if self.user.is_guest:
            raise ApiError("Not allowed for guest users")
        p = self.parse()
        result = self.server.db.write(
            subscriptions.add_subscriptions,
            self.user,
            p.subscriptions,
            p.principals,
            p.channel_options(),
            self.server.realm,
            p.authorization_errors_fatal,
            self.server.settings.web_public_channels,
            p.send_new_subscription_messages,
        )
        self.respond(result)

    def delete(self) -> None:
        p = self.parse()
        result = self.server.db.write(
            subscriptions.remove_subscriptions, self.user, p.subscriptions, p.principals, self.server.realm
        )
        self.respond(result)


class SubscriptionPropertyHandler(BaseHandler):
    params = {"patch": UPDATE_PROPERTY}

    def patch(self, stream_id: str) -> None:
        p = self.parse()
        change = subscription_settings.property_change(int(stream_id), p.property, p.value)
        self.server.db.write(subscription_settings.update_subscription_properties, self.user, [change])
        self.respond()


class SubscriptionPropertiesHandler(BaseHandler):
    params = {"post": UPDATE_PROPERTIES}

    def post(self) -> None:
        p = self.parse()
        self.server.db.write(subscription_settings.update_subscription_properties, self.user, p.subscription_data)
        self.respond()


ROUTES: list[tuple[str, type[tornado.web.RequestHandler]]] = [
    (r"/users/me/subscriptions", SubscriptionsHandler),
    (r"/users/me/subscriptions/properties", SubscriptionPropertiesHandler),
    ("/users/me/subscriptions/" + ID, SubscriptionPropertyHandler),
]

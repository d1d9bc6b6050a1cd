"""Client devices and push registration: POST /register_client_device, POST /remove_client_device,
POST /mobile_push/register, and the legacy token endpoints POST/DELETE /users/me/android_gcm_reg_id
and /users/me/apns_device_token."""

from __future__ import annotations

from typing import Annotated

import msgspec
import tornado.web

from storage.push import devices, push_registration
from storage.push.push_registration import PushRegistration
from tornchat.base import BaseHandler
from tornchat.params import Params


class RemoveClientDevice(msgspec.Struct):
    device_id: int


class LegacyToken(msgspec.Struct):
    token: str


class AddApnsToken(msgspec.Struct):
    token: str
    appid: Annotated[str, msgspec.Meta(pattern=r"^[.a-zA-Z0-9-]+$")]


REMOVE_CLIENT_DEVICE = Params(RemoveClientDevice)
REGISTER_PUSH = Params(PushRegistration)
LEGACY_TOKEN = Params(LegacyToken)
ADD_APNS_TOKEN = Params(AddApnsToken)


class RegisterClientDeviceHandler(BaseHandler):
    def post(self) -> None:
        self.parse()
        self.respond({"device_id": self.server.db.write(devices.create_device, self.user)})


class RemoveClientDeviceHandler(BaseHandler):
    params = {"post": REMOVE_CLIENT_DEVICE}

    def post(self) -> None:
        p = self.parse()
        self.server.db.write(devices.remove_device, self.user, p.device_id)
        self.respond()


class RegisterPushHandler(BaseHandler):
    params = {"post": REGISTER_PUSH}

    def post(self) -> None:
        push_registration.check_human(self.user)  # bots are refused before their parameters
        p = self.parse()
        configured = self.server.settings.push_configured
        self.server.db.write(push_registration.register_push_device, self.user, p, configured)
        self.respond()


class AndroidTokenHandler(BaseHandler):
    params = {"post": LEGACY_TOKEN, "delete": LEGACY_TOKEN}

    def post(self) -> None:
        push_registration.check_human(self.user)
        p = self.parse()
        self.server.db.write(push_registration.add_legacy_token, self.user, "fcm", p.token)
        self.respond()

    def delete(self) -> None:
        push_registration.check_human(self.user)
        p = self.parse()
        self.server.db.write(push_registration.remove_legacy_token, self.user, "fcm", p.token)
        self.respond()


class ApnsTokenHandler(BaseHandler):
    params = {"post": ADD_APNS_TOKEN, "delete": LEGACY_TOKEN}

    def post(self) -> None:
        push_registration.check_human(self.user)
        p = self.parse()
        self.server.db.write(push_registration.add_legacy_token, self.user, "apns", p.token, p.appid)
        self.respond()

    def delete(self) -> None:
        push_registration.check_human(self.user)
        p = self.parse()
        self.server.db.write(push_registration.remove_legacy_token, self.user, "apns", p.token)
        self.respond()


ROUTES: list[tuple[str, type[tornado.web.RequestHandler]]] = [
    (r"/register_client_device", RegisterClientDeviceHandler),
    (r"/remove_client_device", RemoveClientDeviceHandler),
    (r"/mobile_push/register", RegisterPushHandler),
    (r"/users/me/android_gcm_reg_id", AndroidTokenHandler),
    (r"/users/me/apns_device_token", ApnsTokenHandler),
]

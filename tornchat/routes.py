"""The API's route table: each path under /api/v1 and its handler.

app.make_app serves it (with the site's own paths: emoji images, uploads, the web client) and
tornchat.openapi documents it. Order matters where patterns overlap: Tornado takes the first match.
"""

from __future__ import annotations

import tornado.web

from tornchat.base import ID
from tornchat.handlers import (
    alert_words,
    avatars,
    channel_folders,
    channels,
    devices,
    drafts,
    events,
    groups,
    linkifiers,
    message_edit,
    message_flags,
    message_history,
    message_reports,
    messages,
    muted_users,
    presence,
    profile_fields,
    reactions,
    read_receipts,
    realm_emoji,
    saved_snippets,
    scheduled_messages,
    server,
    streams,
    submessages,
    subscriptions,
    topics,
    typing_notifications,
    uploads,
    user_status,
    user_topics,
)
from tornchat.handlers import realm as realm_handlers
from tornchat.handlers import realm_images as realm_image_handlers
from tornchat.handlers import settings as settings_handlers
from tornchat.handlers import users as user_handlers
from tornchat.handlers.openapi import OpenApiHandler

API = r"/api/v1"
ROUTES: list[tuple[str, type[tornado.web.RequestHandler]]] = [
    (r"/server_settings", server.ServerSettingsHandler),
    (r"/openapi\.json", OpenApiHandler),
    (r"/fetch_api_key", server.FetchApiKeyHandler),
    (r"/users", user_handlers.UsersHandler),
    (r"/users/me", user_handlers.OwnUserHandler),
    ("/users/" + ID, user_handlers.UserByIdHandler),
    ("/users/" + ID + "/reactivate", user_handlers.ReactivateUserHandler),
    (r"/users/([^/]*[^/0-9][^/]*)", user_handlers.UserByEmailHandler),  # an email: not all digits
    (r"/user_groups", groups.UserGroupsHandler),
    (r"/user_groups/create", groups.CreateUserGroupHandler),
    (r"/realm/profile_fields", profile_fields.ProfileFieldsHandler),
    (r"/channels/create", channels.CreateChannelHandler),
    *subscriptions.ROUTES,
    *streams.ROUTES,
    *channel_folders.ROUTES,
    *messages.ROUTES,
    *message_edit.ROUTES,
    *message_flags.ROUTES,
    *reactions.ROUTES,
    *submessages.ROUTES,
    *realm_emoji.ROUTES,
    *events.ROUTES,
    *scheduled_messages.ROUTES,
    *drafts.ROUTES,
    *saved_snippets.ROUTES,
    *settings_handlers.ROUTES,
    *realm_handlers.ROUTES,
    *devices.ROUTES,
    *linkifiers.ROUTES,
    *presence.ROUTES,
    *typing_notifications.ROUTES,
    *message_history.ROUTES,
    *uploads.ROUTES,
    *user_topics.ROUTES,
    *alert_words.ROUTES,
    *user_status.ROUTES,
    *muted_users.ROUTES,
    *read_receipts.ROUTES,
    *message_reports.ROUTES,
    *avatars.ROUTES,
    *realm_image_handlers.ROUTES,
    *topics.ROUTES,
]

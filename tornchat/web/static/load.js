// POST /register: fills `state` from the server's initial state and opens the event queue.
import { api } from "./api.js";
import { dmKey, state } from "./state.js";

const EVENT_TYPES = [
  "message", "update_message", "delete_message", "reaction", "update_message_flags", "subscription",
  "stream", "realm_user", "drafts", "scheduled_messages", "saved_snippets", "realm_emoji", "realm",
  "starred_messages", "recent_private_conversations",
];

function addUnread(streamId, topic, id) {
  let topics = state.unread.streams.get(streamId);
  if (!topics) state.unread.streams.set(streamId, (topics = new Map()));
  const key = topic.toLowerCase();
  if (!topics.has(key)) topics.set(key, new Set());
  topics.get(key).add(id);
}

function addDmUnread(key, id) {
  if (!state.unread.dms.has(key)) state.unread.dms.set(key, new Set());
  state.unread.dms.get(key).add(id);
}

/** Records a message as unread in the sidebar's counts. */
export function trackUnread(message, flags) {
  if (flags.includes("read")) return;
  if (message.type === "stream") addUnread(message.stream_id, message.subject, message.id);
  else addDmUnread(dmKey(message.display_recipient.map((r) => r.id)), message.id);
  if (flags.some((f) => f.endsWith("mentioned"))) state.unread.mentions.add(message.id);
}

/** Forgets unread message ids everywhere (they were read or deleted). */
export function dropUnread(ids) {
  const gone = new Set(ids);
  for (const topics of state.unread.streams.values())
    for (const set of topics.values()) for (const id of gone) set.delete(id);
  for (const set of state.unread.dms.values()) for (const id of gone) set.delete(id);
  for (const id of gone) state.unread.mentions.delete(id);
}

function loadUnread(unread) {
  state.unread = { streams: new Map(), dms: new Map(), mentions: new Set(unread.mentions) };
  for (const entry of unread.streams)
    for (const id of entry.unread_message_ids) addUnread(entry.stream_id, entry.topic, id);
  for (const entry of unread.pms) {
    const key = dmKey([entry.other_user_id]);
    for (const id of entry.unread_message_ids) addDmUnread(key, id);
  }
  for (const entry of unread.huddles) {
    const key = dmKey(entry.user_ids_string.split(",").map(Number));
    for (const id of entry.unread_message_ids) addDmUnread(key, id);
  }
}

function setRecentDms(list) {
  state.recentDms = list
    .map((c) => ({ key: dmKey(c.user_ids), max_message_id: c.max_message_id }))
    .sort((a, b) => b.max_message_id - a.max_message_id);
}

/** Registers an event queue and replaces the whole client state with the server's. */
export async function register() {
  const data = await api("POST", "/register", {
    event_types: EVENT_TYPES,
    apply_markdown: true,
    client_gravatar: false,
    include_subscribers: false,
    client_capabilities: { notification_settings_null: true, bulk_message_deletion: true, user_avatar_url_field_optional: false, empty_topic_name: true },
  });
  state.users = new Map(data.realm_users.concat(data.realm_non_active_users || []).map((u) => [u.user_id, u]));
  const meUser = state.users.get(data.user_id) || {};
  state.me = {
    user_id: data.user_id, email: data.email, full_name: data.full_name, is_admin: data.is_admin,
    is_owner: data.is_owner, role: meUser.role, avatar_url: data.avatar_url,
  };
  state.realm = Object.fromEntries(Object.entries(data).filter(([k]) => k.startsWith("realm_") || k.startsWith("max_")));
  state.realmEmoji = new Map(Object.values(data.realm_emoji || {}).map((e) => [e.name, e]));
  state.subscriptions = new Map(data.subscriptions.map((s) => [s.stream_id, s]));
  state.streams = new Map();
  for (const list of [data.streams || [], data.unsubscribed, data.never_subscribed, data.subscriptions])
    for (const s of list) state.streams.set(s.stream_id, { ...state.streams.get(s.stream_id), ...s });
  loadUnread(data.unread_msgs);
  setRecentDms(data.recent_private_conversations || []);
  state.drafts = new Map((data.drafts || []).map((d) => [d.id, d]));
  state.scheduled = new Map((data.scheduled_messages || []).map((m) => [m.scheduled_message_id, m]));
  state.snippets = new Map((data.saved_snippets || []).map((s) => [s.id, s]));
  state.starred = new Set(data.starred_messages || []);
  state.queueId = data.queue_id;
  state.lastEventId = data.last_event_id;
  return data;
}

// The client's copy of server state, filled by POST /register and kept current by events.
export const state = {
  me: null, // { user_id, email, full_name, role, is_admin, avatar_url }
  users: new Map(), // user_id -> user
  subscriptions: new Map(), // stream_id -> subscription
  streams: new Map(), // stream_id -> stream (every channel the user can see)
  realm: {}, // realm_* fields from register (name, emoji, limits)
  realmEmoji: new Map(), // name -> { name, source_url, id }
  unread: {
    streams: new Map(), // stream_id -> Map(topic -> Set(message_id))
    dms: new Map(), // "id,id" (others, sorted) -> Set(message_id)
    mentions: new Set(),
  },
  recentDms: [], // [{ key, user_ids, max_message_id }]
  drafts: new Map(), // draft id -> draft
  scheduled: new Map(), // scheduled_message_id -> scheduled message
  starred: new Set(),
  queueId: null,
  lastEventId: -1,
};

const listeners = new Set();

/** Registers fn(kind) to be called after events change state; returns an unsubscribe function. */
export function onChange(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

export function notifyChange(kind = "state") {
  for (const fn of listeners) {
    try {
      fn(kind);
    } catch (err) {
      console.error(err);
    }
  }
}

export function dmKey(userIds) {
  const myId = state.me ? state.me.user_id : null;
  const others = [...new Set(userIds.map(Number))].filter((id) => id !== myId).sort((a, b) => a - b);
  return others.join(",");
}

export function userName(userId) {
  const user = state.users.get(userId);
  return user ? user.full_name : `User ${userId}`;
}

export function streamName(streamId) {
  const stream = state.streams.get(streamId) || state.subscriptions.get(streamId);
  return stream ? stream.name : `#${streamId}`;
}

export function countSet(set) {
  return set ? set.size : 0;
}

export function streamUnread(streamId) {
  const topics = state.unread.streams.get(streamId);
  let total = 0;
  if (topics) for (const ids of topics.values()) total += ids.size;
  return total;
}

export function topicUnread(streamId, topic) {
  const topics = state.unread.streams.get(streamId);
  return countSet(topics && topics.get(topic.toLowerCase()));
}

/** Unread messages of the combined feed: channels that are not muted, and direct messages. */
export function totalUnread() {
  let total = 0;
  for (const [streamId, topics] of state.unread.streams) {
    const sub = state.subscriptions.get(streamId);
    if (sub && sub.is_muted) continue;
    for (const ids of topics.values()) total += ids.size;
  }
  for (const ids of state.unread.dms.values()) total += ids.size;
  return total;
}

// The live loop: long-poll GET /events, apply each event to `state`, tell the views.
import { api, ApiError } from "./api.js";
import { dropUnread, register, trackUnread } from "./load.js";
import { dmKey, notifyChange, state } from "./state.js";

const hooks = new Map(); // event type -> Set(fn(event))
let running = false;
let controller = null;
let onReload = () => {};

/** fn(event) runs after the event has been applied to state. */
export function onEvent(type, fn) {
  if (!hooks.has(type)) hooks.set(type, new Set());
  hooks.get(type).add(fn);
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Starts polling; reload() is called after a re-registration replaced the state. */
export function startEvents(reload) {
  onReload = reload;
  running = true;
  controller = new AbortController();
  poll(controller.signal);
}

/** Stops polling and deletes the server-side queue (sign-out). */
export async function stopEvents() {
  running = false;
  if (controller) controller.abort();
  const queueId = state.queueId;
  state.queueId = null;
  // Bounded: signing out never waits on a server that does not answer.
  const signal = AbortSignal.timeout(2000);
  if (queueId) await api("DELETE", "/events", { queue_id: queueId }, { signal }).catch(() => {});
}

async function poll(signal) {
  let failures = 0;
  while (running && !signal.aborted) {
    try {
      const data = await api("GET", "/events", { queue_id: state.queueId, last_event_id: state.lastEventId }, { signal });
      failures = 0;
      setConnection(true);
      for (const event of data.events) {
        state.lastEventId = Math.max(state.lastEventId, event.id);
        apply(event);
      }
    } catch (err) {
      if (signal.aborted || (err && err.name === "AbortError")) return;
      if (err instanceof ApiError && err.code === "BAD_EVENT_QUEUE_ID") {
        failures = await reRegister(signal, failures);
        continue;
      }
      if (err instanceof ApiError && err.status === 401) {
        window.dispatchEvent(new CustomEvent("tornchat:unauthorized"));
        return;
      }
      failures += 1;
      setConnection(false);
      await sleep(backoff(failures));
    }
  }
}

function backoff(failures) {
  const base = Math.min(30000, 1000 * 2 ** Math.min(failures - 1, 5));
  return base / 2 + Math.random() * (base / 2);
}

async function reRegister(signal, failures) {
  while (running && !signal.aborted) {
    try {
      await register();
      setConnection(true);
      onReload();
      notifyChange("reload");
      return 0;
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) {
        window.dispatchEvent(new CustomEvent("tornchat:unauthorized"));
        running = false;
        return failures;
      }
      failures += 1;
      setConnection(false);
      await sleep(backoff(failures));
    }
  }
  return failures;
}

let connected = true;

function setConnection(ok) {
  if (ok === connected) return;
  connected = ok;
  document.body.classList.toggle("offline", !ok);
  window.dispatchEvent(new CustomEvent("tornchat:connection", { detail: { connected: ok } }));
}

function apply(event) {
  try {
    const fn = appliers[event.type];
    if (fn) fn(event);
    for (const hook of hooks.get(event.type) || []) hook(event);
    if (event.type !== "heartbeat") notifyChange(event.type);
  } catch (err) {
    console.error("event", event, err);
  }
}

function updateRecentDm(message) {
  if (message.type !== "private") return;
  const key = dmKey(message.display_recipient.map((r) => r.id));
  const rest = state.recentDms.filter((c) => c.key !== key);
  state.recentDms = [{ key, max_message_id: message.id }, ...rest];
}

const appliers = {
  message(event) {
    const flags = event.flags || [];
    trackUnread(event.message, flags);
    if (flags.includes("starred")) state.starred.add(event.message.id);
    updateRecentDm(event.message);
  },
  delete_message(event) {
    const ids = event.message_ids || [event.message_id];
    dropUnread(ids);
    for (const id of ids) state.starred.delete(id);
  },
  update_message(event) {
    if (event.subject === undefined && event.new_stream_id === undefined) return;
    // A move: unread ids follow the messages to their new channel/topic.
    const ids = new Set(event.message_ids || [event.message_id]);
    const topics = state.unread.streams.get(event.stream_id);
    if (!topics) return;
    const oldKey = (event.orig_subject || "").toLowerCase();
    const moved = [...(topics.get(oldKey) || [])].filter((id) => ids.has(id));
    dropUnread(moved);
    const target = { type: "stream", stream_id: event.new_stream_id ?? event.stream_id, subject: event.subject ?? event.orig_subject };
    for (const id of moved) trackUnread({ ...target, id }, []);
  },
  update_message_flags(event) {
    const op = event.op || event.operation;
    if (event.flag === "read" && op === "add") dropUnread(event.all ? allUnreadIds() : event.messages);
    if (event.flag === "read" && op === "remove" && event.message_details) {
      for (const id of event.messages) {
        const d = event.message_details[id];
        if (!d) continue;
        const message = d.type === "stream"
          ? { id, type: "stream", stream_id: d.stream_id, subject: d.topic }
          : { id, type: "private", display_recipient: (d.user_ids || []).map((uid) => ({ id: uid })) };
        trackUnread(message, d.mentioned ? ["mentioned"] : []);
      }
    }
    if (event.flag === "starred") for (const id of event.messages) op === "add" ? state.starred.add(id) : state.starred.delete(id);
  },
  subscription(event) {
    if (event.op === "add") for (const s of event.subscriptions) {
      state.subscriptions.set(s.stream_id, s);
      state.streams.set(s.stream_id, { ...state.streams.get(s.stream_id), ...s });
    } else if (event.op === "remove") for (const s of event.subscriptions) state.subscriptions.delete(s.stream_id);
    else if (event.op === "update") {
      const sub = state.subscriptions.get(event.stream_id);
      if (sub) sub[event.property] = event.value;
      if (sub && event.property === "in_home_view") sub.is_muted = !event.value;
    }
  },
  stream(event) {
    if (event.op === "create") for (const s of event.streams) state.streams.set(s.stream_id, s);
    else if (event.op === "delete") for (const id of event.stream_ids) {
      state.streams.delete(id);
      state.subscriptions.delete(id);
    } else if (event.op === "update") {
      for (const map of [state.streams, state.subscriptions]) {
        const s = map.get(event.stream_id);
        if (s) s[event.property] = event.value;
        if (s && event.property === "invite_only") s.invite_only = event.value;
      }
    }
  },
  realm_user(event) {
    if (event.op === "add") state.users.set(event.person.user_id, event.person);
    else if (event.op === "remove") {
      const u = state.users.get(event.person.user_id);
      if (u) u.is_active = false;
    } else if (event.op === "update") {
      const u = state.users.get(event.person.user_id);
      if (u) Object.assign(u, event.person);
      if (event.person.user_id === state.me.user_id) {
        Object.assign(state.me, pick(event.person, ["full_name", "email", "role", "avatar_url"]));
        if (event.person.role !== undefined) state.me.is_admin = event.person.role <= 200;
      }
    }
  },
  drafts(event) {
    if (event.op === "add") for (const d of event.drafts) state.drafts.set(d.id, d);
    else if (event.op === "update") state.drafts.set(event.draft.id, event.draft);
    else if (event.op === "remove") state.drafts.delete(event.draft_id);
  },
  scheduled_messages(event) {
    if (event.op === "add") for (const m of event.scheduled_messages) state.scheduled.set(m.scheduled_message_id, m);
    else if (event.op === "update") state.scheduled.set(event.scheduled_message.scheduled_message_id, event.scheduled_message);
    else if (event.op === "remove") state.scheduled.delete(event.scheduled_message_id);
  },
  saved_snippets(event) {
    if (event.op === "add") state.snippets.set(event.saved_snippet.id, event.saved_snippet);
    else if (event.op === "update") state.snippets.set(event.saved_snippet.id, event.saved_snippet);
    else if (event.op === "remove") state.snippets.delete(event.saved_snippet_id);
  },
  realm(event) {
    if (event.op === "update") state.realm[`realm_${event.property}`] = event.value;
    else if (event.op === "update_dict")
      for (const [key, value] of Object.entries(event.data)) state.realm[`realm_${key}`] = value;
  },
  realm_emoji(event) {
    if (event.op === "update") state.realmEmoji = new Map(Object.values(event.realm_emoji).map((e) => [e.name, e]));
  },
};

function pick(obj, keys) {
  return Object.fromEntries(keys.filter((k) => obj[k] !== undefined).map((k) => [k, obj[k]]));
}

function allUnreadIds() {
  const ids = [];
  for (const topics of state.unread.streams.values()) for (const set of topics.values()) ids.push(...set);
  for (const set of state.unread.dms.values()) ids.push(...set);
  return ids;
}

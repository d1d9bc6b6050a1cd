// The sidebar: views (all, starred, mentions), channels with their topics, direct-message conversations.
import { api } from "./api.js";
import { onEvent } from "./events.js";
import { sameNarrow, views } from "./narrow.js";
import { countSet, state, streamUnread, topicUnread, totalUnread, userName } from "./state.js";
import { el } from "./ui.js";

let root = null;
let current = views.all();
let navigate = () => {};
let openSettings = () => {};
const topicsCache = new Map(); // stream_id -> [{name, max_id}]

export function createSidebar(onNavigate, onChannelSettings) {
  navigate = onNavigate;
  openSettings = onChannelSettings;
  root = el("nav", { class: "sidebar", id: "sidebar", "aria-label": "Conversations" });
  return root;
}

export function setSelected(narrow) {
  current = narrow;
  if ((narrow.kind === "stream" || narrow.kind === "topic") && !topicsCache.has(narrow.streamId)) loadTopics(narrow.streamId);
  renderSidebar();
}

export function forgetTopics() {
  topicsCache.clear();
  if (current.streamId) loadTopics(current.streamId);
}

async function loadTopics(streamId) {
  try {
    const data = await api("GET", `/users/me/${streamId}/topics`);
    topicsCache.set(streamId, data.topics);
    renderSidebar();
  } catch {
    topicsCache.set(streamId, []);
  }
}

function unreadBadge(count) {
  return el("span", { class: "unread-count", "data-testid": "unread-count", "aria-label": count ? `${count} unread` : null }, count ? String(count) : "");
}

function navButton(label, narrow, testid, count, extra = {}) {
  const selected = sameNarrow(current, narrow);
  return el(
    "button",
    {
      type: "button", class: "nav-link" + (selected ? " selected" : ""), "data-testid": testid,
      "aria-current": selected ? "page" : null, onclick: () => navigate(narrow), "data-key": `${testid}:${JSON.stringify(narrow)}`, ...extra,
    },
    el("span", { class: "nav-label" }, label),
    count === null ? null : unreadBadge(count),
  );
}

function viewsSection() {
  return el(
    "ul", { class: "nav-list views" },
    el("li", {}, navButton("All messages", views.all(), "view-all", totalUnread())),
    el("li", {}, navButton("Starred", views.starred(), "view-starred", null)),
    el("li", {}, navButton("Mentions", views.mentions(), "view-mentions", countSet(state.unread.mentions))),
  );
}

function sortedSubscriptions() {
  return [...state.subscriptions.values()].sort((a, b) => (b.pin_to_top - a.pin_to_top) || a.name.localeCompare(b.name));
}

function channelItem(sub) {
  const narrow = views.stream(sub.stream_id);
  const open = (current.kind === "stream" || current.kind === "topic") && current.streamId === sub.stream_id;
  const button = navButton(sub.name, narrow, "channel-link", streamUnread(sub.stream_id));
  button.prepend(el("span", { class: "channel-swatch", "aria-hidden": "true" }, sub.invite_only ? "🔒" : "#"));
  const settings = el(
    "button",
    { type: "button", class: "icon-button row-settings", "data-testid": "channel-settings", "aria-label": `Settings for ${sub.name}`, title: "Channel settings", "data-key": `settings:${sub.stream_id}` },
    "⋯",
  );
  settings.addEventListener("click", () => openSettings(sub.stream_id));
  const item = el(
    "li",
    {
      class: "channel-item" + (sub.is_muted ? " muted" : "") + (sub.pin_to_top ? " pinned" : ""),
      "data-testid": "channel-item", "data-stream-id": sub.stream_id,
    },
    el("div", { class: "row" }, button, settings),
  );
  if (sub.color) item.style.setProperty("--channel-color", sub.color);
  // Topics are a sibling of the channel's row, so the channel-item holds only its own unread count.
  return open ? [item, el("li", { class: "topics-of" }, topicList(sub.stream_id))] : [item];
}

function topicList(streamId) {
  const topics = topicsCache.get(streamId);
  if (!topics) return el("p", { class: "muted-text topic-loading" }, "Loading topics…");
  const unreadTopics = state.unread.streams.get(streamId) || new Map();
  const names = new Map(topics.map((t) => [t.name.toLowerCase(), t]));
  // Topics with unread messages the list does not know yet come first.
  for (const [key, ids] of unreadTopics) if (ids.size && !names.has(key)) names.set(key, { name: key, max_id: Infinity });
  const sorted = [...names.values()].sort((a, b) => b.max_id - a.max_id);
  return el(
    "ul", { class: "topic-list" },
    ...sorted.map((t) =>
      el(
        "li",
        { class: "topic-item", "data-testid": "topic-item", "data-stream-id": streamId, "data-topic": t.name },
        navButton(t.name || state.realm.realm_empty_topic_display_name, views.topic(streamId, t.name), "topic-link", topicUnread(streamId, t.name)),
      ),
    ),
  );
}

function dmItems() {
  const keys = state.recentDms.map((c) => c.key);
  for (const [key, set] of state.unread.dms) if (set.size && !keys.includes(key)) keys.unshift(key);
  return keys.slice(0, 30).map((key) => {
    const ids = key ? key.split(",").map(Number) : [];
    const label = ids.length ? ids.map(userName).join(", ") : `${state.me.full_name} (you)`;
    return el(
      "li", { class: "dm-item", "data-testid": "dm-item", "data-user-ids": key },
      navButton(label, views.dm(ids), "dm-link", countSet(state.unread.dms.get(key))),
    );
  });
}

/** Redraws the sidebar from state, keeping keyboard focus on the same control. */
export function renderSidebar() {
  if (!root) return;
  const focusKey = root.contains(document.activeElement) ? document.activeElement.dataset.key : null;
  const subs = sortedSubscriptions();
  const parts = [
    viewsSection(),
    el("h2", { class: "sidebar-heading" }, "Channels"),
    el("ul", { class: "nav-list channels" }, ...subs.flatMap(channelItem)),
    subs.length ? null : el("p", { class: "muted-text" }, "You are not subscribed to any channel yet."),
    el("h2", { class: "sidebar-heading" }, "Direct messages"),
    el("ul", { class: "nav-list dms" }, ...dmItems()),
  ];
  root.replaceChildren(...parts.filter(Boolean));
  if (focusKey) {
    const again = [...root.querySelectorAll("[data-key]")].find((n) => n.dataset.key === focusKey);
    if (again) again.focus();
  }
}

// Topics of the open channel follow new messages and moves.
onEvent("message", (event) => {
  const m = event.message;
  if (m.type !== "stream" || !topicsCache.has(m.stream_id)) return;
  const topics = topicsCache.get(m.stream_id).filter((t) => t.name.toLowerCase() !== m.subject.toLowerCase());
  topicsCache.set(m.stream_id, [{ name: m.subject, max_id: m.id }, ...topics]);
});

onEvent("update_message", (event) => {
  if (event.subject === undefined && event.new_stream_id === undefined) return;
  topicsCache.delete(event.stream_id);
  if (event.new_stream_id) topicsCache.delete(event.new_stream_id);
  if (current.streamId) loadTopics(current.streamId);
});

// A deletion may empty a topic: the open channel's topics are asked again (shown as they were meanwhile).
onEvent("delete_message", (event) => {
  if (event.stream_id !== undefined && topicsCache.has(event.stream_id)) loadTopics(event.stream_id);
});

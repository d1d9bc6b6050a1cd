// The message list: loads a narrow around the first unread message, pages older/newer as the user
// scrolls, applies live events, and marks what the user has seen as read.
import { api } from "./api.js";
import { onEvent } from "./events.js";
import { matches, operators } from "./narrow.js";
import { buildMessage, renderReactions, setStarred } from "./message_view.js";
import { state } from "./state.js";
import { clear, el, formatDate, toast } from "./ui.js";

const PAGE = 60;
const EDGE = 400; // px from an end of the list that triggers the next page
const DELETE_GRACE_MS = 1500; // how long a delete_message event may trail the refusal of a read flag

const view = {
  narrow: null,
  messages: [], // sorted by id
  rows: new Map(), // id -> row element
  foundOldest: false,
  foundNewest: false,
  loadingOlder: false,
  loadingNewer: false,
  generation: 0,
};

let listEl = null;
let innerEl = null;
let statusTop = null;
let statusBottom = null;
let observer = null;
const pendingRead = new Set();
let readTimer = null;

export function currentNarrow() {
  return view.narrow;
}

function messageById(id) {
  const i = indexOf(id);
  return i >= 0 ? view.messages[i] : null;
}

/** Builds the scroll container (data-testid="message-list") once. */
export function createMessageList() {
  statusTop = el("div", { class: "list-status", "data-testid": "list-status", "aria-live": "polite" });
  statusBottom = el("div", { class: "list-status" });
  innerEl = el("div", { class: "messages" });
  listEl = el(
    "div",
    { class: "message-list", "data-testid": "message-list", tabindex: "0", role: "log", "aria-label": "Messages" },
    statusTop,
    innerEl,
    statusBottom,
  );
  listEl.addEventListener("scroll", () => checkEdges(), { passive: true });
  listEl.addEventListener("click", openLink);
  observer = new IntersectionObserver(onIntersect, { root: listEl, threshold: [0, 0.5, 1] });
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible") for (const row of innerEl.children) reobserve(row);
  });
  return listEl;
}

/** A link in a message opens in a new tab (the chat stays open), except links to a narrow of this page. */
function openLink(event) {
  const link = event.target.closest && event.target.closest(".message-content a[href]");
  if (!link || event.defaultPrevented || event.button !== 0) return;
  let url;
  try {
    url = new URL(link.getAttribute("href"), location.href);
  } catch {
    return;
  }
  if (url.origin === location.origin && url.pathname === location.pathname && url.hash.startsWith("#narrow/")) return;
  if (!["http:", "https:", "mailto:"].includes(url.protocol)) return;
  event.preventDefault();
  window.open(url.href, "_blank", "noopener,noreferrer");
}

function indexOf(id) {
  let lo = 0;
  let hi = view.messages.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const v = view.messages[mid].id;
    if (v === id) return mid;
    if (v < id) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

function fetchMessages(anchor, numBefore, numAfter) {
  return api("GET", "/messages", {
    anchor, num_before: numBefore, num_after: numAfter, narrow: operators(view.narrow), apply_markdown: true,
    client_gravatar: false,
  });
}

/** Shows a narrow, opening at its first unread message (newest for searches). */
export async function showNarrow(narrow) {
  const generation = ++view.generation;
  view.narrow = narrow;
  view.messages = [];
  view.rows = new Map();
  view.foundOldest = view.foundNewest = false;
  view.loadingOlder = view.loadingNewer = true;
  observer.disconnect();
  clear(innerEl);
  statusTop.textContent = "Loading…";
  statusBottom.textContent = "";
  try {
    const anchor = narrow.kind === "search" ? "newest" : "first_unread";
    const data = await fetchMessages(anchor, PAGE, PAGE);
    if (generation !== view.generation) return;
    view.foundOldest = data.found_oldest;
    view.foundNewest = data.found_newest;
    insert(data.messages);
    updateStatus();
    scrollToAnchor(data.anchor, data.found_anchor);
  } catch (err) {
    if (generation === view.generation) statusTop.textContent = "Could not load messages: " + err.message;
  } finally {
    if (generation === view.generation) view.loadingOlder = view.loadingNewer = false;
  }
  if (generation === view.generation) requestAnimationFrame(() => checkEdges());
}

function scrollToAnchor(anchorId, found) {
  const firstUnread = view.messages.find((m) => !(m.flags || []).includes("read"));
  const target = found ? view.rows.get(anchorId) : firstUnread && view.rows.get(firstUnread.id);
  if (target && firstUnread) listEl.scrollTop = Math.max(0, target.offsetTop - listEl.offsetTop - 48);
  else listEl.scrollTop = listEl.scrollHeight;
}

function updateStatus() {
  statusTop.textContent = view.foundOldest
    ? view.messages.length ? "Beginning of this conversation" : "No messages here yet."
    : "";
  statusBottom.textContent = "";
}

function checkEdges() {
  if (!listEl || !view.narrow) return;
  if (listEl.scrollTop < EDGE && !view.foundOldest && !view.loadingOlder) loadOlder();
  const fromBottom = listEl.scrollHeight - listEl.scrollTop - listEl.clientHeight;
  if (fromBottom < EDGE && !view.foundNewest && !view.loadingNewer) loadNewer();
}

async function loadOlder() {
  if (!view.messages.length) return;
  const generation = view.generation;
  view.loadingOlder = true;
  statusTop.textContent = "Loading older messages…";
  try {
    const data = await fetchMessages(view.messages[0].id, PAGE, 0);
    if (generation !== view.generation) return;
    view.foundOldest = data.found_oldest;
    const fromBottom = listEl.scrollHeight - listEl.scrollTop;
    insert(data.messages);
    listEl.scrollTop = listEl.scrollHeight - fromBottom;
    updateStatus();
  } catch (err) {
    toast("Could not load older messages: " + err.message, "error");
  } finally {
    if (generation === view.generation) view.loadingOlder = false;
  }
  if (generation === view.generation) requestAnimationFrame(() => checkEdges());
}

async function loadNewer() {
  if (!view.messages.length) return;
  const generation = view.generation;
  view.loadingNewer = true;
  statusBottom.textContent = "Loading newer messages…";
  try {
    const data = await fetchMessages(view.messages[view.messages.length - 1].id, 0, PAGE);
    if (generation !== view.generation) return;
    view.foundNewest = data.found_newest;
    insert(data.messages);
    statusBottom.textContent = "";
  } catch (err) {
    toast("Could not load newer messages: " + err.message, "error");
  } finally {
    if (generation === view.generation) view.loadingNewer = false;
  }
  if (generation === view.generation) requestAnimationFrame(() => checkEdges());
}

/** Inserts messages (any order, duplicates ignored) at their places in the list. */
function insert(messages) {
  for (const message of [...messages].sort((a, b) => a.id - b.id)) {
    if (view.rows.has(message.id)) continue;
    let i = view.messages.length;
    while (i > 0 && view.messages[i - 1].id > message.id) i--;
    view.messages.splice(i, 0, message);
    const row = el("div", { class: "message-row" }, el("div", { class: "row-prefix" }), buildMessage(message, view.narrow));
    const next = view.messages[i + 1];
    innerEl.insertBefore(row, next ? view.rows.get(next.id) : null);
    view.rows.set(message.id, row);
    refreshPrefix(i);
    if (next) refreshPrefix(i + 1);
    reobserve(row);
  }
}

function recipientLabel(message) {
  if (message.type === "stream") return `${message.stream_id}\u0000${message.subject.toLowerCase()}`;
  return "dm:" + message.display_recipient.map((r) => r.id).sort((a, b) => a - b).join(",");
}

/** The date separator and recipient bar shown before message i (they depend on message i-1). */
function refreshPrefix(i) {
  const message = view.messages[i];
  const prev = view.messages[i - 1];
  const prefix = view.rows.get(message.id).firstChild;
  const parts = [];
  const day = formatDate(message.timestamp);
  const newDay = !prev || formatDate(prev.timestamp) !== day;
  if (newDay) parts.push(el("div", { class: "date-separator", "data-testid": "date-separator", role: "separator" }, day));
  const showRecipient = !["topic", "dm"].includes(view.narrow.kind);
  if (showRecipient && (newDay || !prev || recipientLabel(prev) !== recipientLabel(message)))
    parts.push(recipientBar(message));
  prefix.replaceChildren(...parts);
}

function recipientBar(message) {
  if (message.type === "stream") {
    const sub = state.subscriptions.get(message.stream_id) || state.streams.get(message.stream_id);
    const bar = el(
      "button",
      { type: "button", class: "recipient-bar stream-bar", "data-action": "narrow-topic" },
      `#${sub ? sub.name : message.display_recipient} › ${message.subject || state.realm.realm_empty_topic_display_name}`,
    );
    if (sub && sub.color) bar.style.setProperty("--channel-color", sub.color);
    bar.addEventListener("click", () =>
      window.dispatchEvent(new CustomEvent("tornchat:narrow", { detail: { kind: "topic", streamId: message.stream_id, topic: message.subject } })),
    );
    return bar;
  }
  const others = message.display_recipient.filter((r) => r.id !== state.me.user_id);
  const ids = others.map((r) => r.id).sort((a, b) => a - b);
  const bar = el(
    "button",
    { type: "button", class: "recipient-bar dm-bar" },
    others.length ? "Direct message with " + others.map((r) => r.full_name).join(", ") : "Notes to self",
  );
  bar.addEventListener("click", () =>
    window.dispatchEvent(new CustomEvent("tornchat:narrow", { detail: { kind: "dm", userIds: ids } })),
  );
  return bar;
}

function removeMessage(id) {
  const i = indexOf(id);
  if (i < 0) return;
  const row = view.rows.get(id);
  observer.unobserve(row.lastChild);
  row.remove();
  view.rows.delete(id);
  view.messages.splice(i, 1);
  if (i < view.messages.length) refreshPrefix(i);
}

function replaceMessage(message) {
  const row = view.rows.get(message.id);
  if (!row) return;
  const old = row.lastChild;
  if (old.classList.contains("editing")) {
    // Drawn again once the edit form closes (the edit's own event often comes before its answer).
    if (!old.dataset.changed) old.addEventListener("tornchat:edit-end", () => replaceMessage(message), { once: true });
    old.dataset.changed = "true";
    return;
  }
  observer.unobserve(old);
  const fresh = buildMessage(message, view.narrow);
  old.replaceWith(fresh);
  reobserve(row);
}

// Reading: a message counts as seen when half of it (or half the list's height) is visible.
function reobserve(row) {
  const article = row.lastChild;
  if (article.dataset.read !== "false" || view.narrow.kind === "search") return;
  observer.unobserve(article); // observe() of a watched element would not report it again
  observer.observe(article);
}

function onIntersect(entries) {
  if (document.visibilityState !== "visible") return;
  for (const entry of entries) {
    if (!entry.isIntersecting) continue;
    const big = entry.rootBounds && entry.intersectionRect.height >= entry.rootBounds.height / 2;
    if (entry.intersectionRatio < 0.5 && !big) continue;
    const id = Number(entry.target.dataset.messageId);
    observer.unobserve(entry.target);
    pendingRead.add(id);
  }
  if (pendingRead.size && !readTimer) readTimer = setTimeout(flushRead, 400);
}

async function flushRead(retry = false) {
  readTimer = null;
  const ids = [...pendingRead].filter((id) => messageById(id));
  pendingRead.clear();
  if (!ids.length) return;
  try {
    await api("POST", "/messages/flags", { messages: ids, op: "add", flag: "read" });
    for (const id of ids) markFlag(id, "read", true);
  } catch (err) {
    // A message deleted (or moved out of reach) after it was seen: the server refuses the whole
    // batch, and the delete_message event follows. Once that event has had time to remove it, the
    // rest is sent again; refused again, each is sent alone, and one still refused is gone: there
    // is nothing to tell.
    if (err.message === "Invalid message(s)") {
      if (!retry) {
        setTimeout(() => {
          for (const id of ids) pendingRead.add(id);
          flushRead(true);
        }, DELETE_GRACE_MS);
      } else {
        for (const id of ids) {
          api("POST", "/messages/flags", { messages: [id], op: "add", flag: "read" }).then(
            () => markFlag(id, "read", true),
            () => {},
          );
        }
      }
      return;
    }
    toast("Could not mark messages as read: " + err.message, "error");
  }
}

function markFlag(id, flag, on) {
  const message = messageById(id);
  if (!message) return;
  const flags = new Set(message.flags || []);
  if (on) flags.add(flag);
  else flags.delete(flag);
  message.flags = [...flags];
  const article = view.rows.get(id).lastChild;
  // Marked unread (here or elsewhere): it stays unread while this view is open, as in Zulip.
  if (flag === "read") article.dataset.read = on ? "true" : "false";
  if (flag === "starred") setStarred(article, on);
}

/** Scrolls to the newest message shown (after sending). */
export function scrollToBottom() {
  listEl.scrollTop = listEl.scrollHeight;
}

// Live events.
onEvent("message", (event) => {
  const message = { ...event.message, flags: event.flags || [] };
  if (!view.narrow || !view.foundNewest || !matches(view.narrow, message)) return;
  // Older than the loaded range (a late event): it would sit across a gap.
  if (!view.foundOldest && view.messages.length && message.id < view.messages[0].id) return;
  const nearBottom = listEl.scrollHeight - listEl.scrollTop - listEl.clientHeight < 120;
  insert([message]);
  updateStatus(); // an empty conversation's first message: no longer "No messages here yet."
  if (nearBottom || message.sender_id === state.me.user_id) scrollToBottom();
});

onEvent("delete_message", (event) => {
  for (const id of event.message_ids || [event.message_id]) {
    pendingRead.delete(id);
    removeMessage(id);
  }
  if (view.narrow) updateStatus();
});

onEvent("update_message", (event) => {
  const absent = [];
  for (const id of event.message_ids || [event.message_id]) {
    const message = messageById(id);
    if (!message) {
      absent.push(id);
      continue;
    }
    if (event.rendered_content !== undefined && id === event.message_id) {
      message.content = event.rendered_content;
      message.last_edit_timestamp = event.edit_timestamp;
    }
    if (event.subject !== undefined || event.new_stream_id !== undefined) {
      if (event.subject !== undefined) message.subject = event.subject;
      if (event.new_stream_id !== undefined) message.stream_id = event.new_stream_id;
      message.last_moved_timestamp = event.edit_timestamp;
      if (!matches(view.narrow, message) && view.narrow.kind !== "search") {
        removeMessage(id);
        continue;
      }
    }
    if (event.flags) message.flags = event.flags;
    replaceMessage(message);
    if (event.subject !== undefined || event.new_stream_id !== undefined) {
      // Its recipient bar (and the next message's) name the new place.
      const i = indexOf(id);
      refreshPrefix(i);
      if (i + 1 < view.messages.length) refreshPrefix(i + 1);
    }
  }
  if (event.subject !== undefined || event.new_stream_id !== undefined) showMovedIn(event, absent);
});

const ARRIVAL_FETCHES = 20; // more messages arriving in the open view than this: the view is loaded again

/** Messages moved into the open view from elsewhere appear at their places within the loaded range. */
function showMovedIn(event, ids) {
  const narrow = view.narrow;
  const target = { type: "stream", stream_id: event.new_stream_id ?? event.stream_id, subject: event.subject ?? event.orig_subject };
  if (narrow && ["all", "stream", "topic"].includes(narrow.kind) && matches(narrow, target)) showArrivals(ids);
}

/** Shows messages not on screen that now belong to the open view (moved in, starred elsewhere). */
async function showArrivals(ids) {
  const narrow = view.narrow;
  const last = view.messages.length ? view.messages[view.messages.length - 1].id : null;
  const inRange = (id) =>
    (view.foundOldest || (last !== null && id > view.messages[0].id)) && (view.foundNewest || (last !== null && id < last));
  const wanted = ids.filter((id) => !view.rows.has(id) && inRange(id));
  if (!wanted.length) return;
  if (wanted.length > ARRIVAL_FETCHES) {
    showNarrow(narrow);
    return;
  }
  const generation = view.generation;
  try {
    // Each through the view's own narrow: the server says whether it belongs here.
    const pages = await Promise.all(wanted.map((id) => fetchMessages(id, 0, 0)));
    if (generation !== view.generation) return;
    const wantedSet = new Set(wanted);
    insert(pages.flatMap((data) => data.messages).filter((m) => wantedSet.has(m.id) && inRange(m.id)));
  } catch (err) {
    if (generation === view.generation) toast("Could not show new messages of this view: " + err.message, "error");
  }
}

// A channel renamed or recoloured: the recipient bars name it as it is now.
function redrawPrefixes(event) {
  if (event.op !== "update" || !["name", "color"].includes(event.property)) return;
  for (let i = 0; i < view.messages.length; i++) refreshPrefix(i);
}
onEvent("stream", redrawPrefixes);
onEvent("subscription", redrawPrefixes);

// A person renamed: their messages on screen carry the new name.
onEvent("realm_user", (event) => {
  if (event.op !== "update" || event.person.full_name === undefined) return;
  for (const message of view.messages) {
    if (message.sender_id !== event.person.user_id) continue;
    message.sender_full_name = event.person.full_name;
    replaceMessage(message);
  }
});

onEvent("reaction", (event) => {
  const message = messageById(event.message_id);
  if (!message) return;
  const same = (r) => r.user_id === event.user_id && r.emoji_code === event.emoji_code && r.reaction_type === event.reaction_type;
  message.reactions = (message.reactions || []).filter((r) => !same(r));
  if (event.op === "add") message.reactions.push(pickReaction(event));
  renderReactions(view.rows.get(message.id).lastChild, message);
});

function pickReaction(e) {
  return { emoji_name: e.emoji_name, emoji_code: e.emoji_code, reaction_type: e.reaction_type, user_id: e.user_id };
}

onEvent("update_message_flags", (event) => {
  const op = event.op || event.operation;
  const ids = event.all ? view.messages.map((m) => m.id) : event.messages;
  for (const id of ids) markFlag(id, event.flag, op === "add");
  if (event.flag === "starred" && view.narrow && view.narrow.kind === "starred") {
    if (op === "remove") for (const id of ids) removeMessage(id);
    else showArrivals(ids); // starred in another tab or client, as Zulip's starred view shows
  }
});

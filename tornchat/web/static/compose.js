// The compose box: to a channel and topic or to people; Enter sends, Shift+Enter is a newline.
import { api } from "./api.js";
import { bindCompose, conversationChanged, discardDraft, draftChanged, openDrafts } from "./drafts.js";
import { scrollToBottom } from "./messages.js";
import { openScheduled, scheduleMessage, schedulePicker } from "./scheduled.js";
import { openSnippets } from "./snippets.js";
import { state, userName } from "./state.js";
import { debounce, el, toast } from "./ui.js";

const f = {}; // the form's controls

function usersByEmail() {
  const map = new Map();
  for (const u of state.users.values()) {
    map.set(u.email.toLowerCase(), u.user_id);
    if (u.delivery_email) map.set(u.delivery_email.toLowerCase(), u.user_id);
  }
  return map;
}

function recipientEmails() {
  return f.to.value.split(",").map((s) => s.trim()).filter(Boolean);
}

/** The conversation the box writes to, as a draft's {type, to, topic}; null when incomplete. */
function conversation() {
  if (f.type.value === "stream") {
    const streamId = Number(f.channel.value);
    return streamId ? { type: "stream", to: [streamId], topic: f.topic.value.trim() } : null;
  }
  const byEmail = usersByEmail();
  const ids = recipientEmails().map((e) => byEmail.get(e.toLowerCase()));
  if (!ids.length || ids.some((id) => id === undefined)) return null;
  return { type: "private", to: ids.sort((a, b) => a - b), topic: "" };
}

/** The POST /messages (or /scheduled_messages) parameters for what the box holds. */
function messageParams() {
  const content = f.content.value;
  if (!content.trim()) throw new Error("Write a message first.");
  if (f.type.value === "stream") {
    if (!f.channel.value) throw new Error("Choose a channel.");
    return { type: "stream", to: Number(f.channel.value), topic: f.topic.value.trim(), content };
  }
  const emails = recipientEmails();
  if (!emails.length) throw new Error("Add at least one recipient.");
  const byEmail = usersByEmail();
  const ids = emails.map((e) => byEmail.get(e.toLowerCase()));
  return { type: "private", to: ids.every((id) => id !== undefined) ? ids : emails, content };
}

function syncType() {
  const stream = f.type.value === "stream";
  f.streamFields.hidden = !stream;
  f.dmFields.hidden = stream;
}

/** Rebuilds the channel choices: the subscriptions, and the chosen channel while the user can still see it.
 * A chosen channel that is gone leaves no choice rather than the first one: a message is never sent to
 * a channel the user did not pick (an unsubscribe of the open channel, a topic of another channel). */
function refreshChannels(chosen = f.channel.value) {
  const shown = new Map([...state.subscriptions.values()].map((s) => [String(s.stream_id), s]));
  const stream = state.streams.get(Number(chosen));
  if (chosen && !shown.has(chosen) && stream && !stream.is_archived) shown.set(chosen, stream);
  // Before any choice the first channel is offered; once a choice is lost, "Choose a channel" stays.
  const lost = chosen ? !shown.has(chosen) : f.channel.options.length > 0;
  const channels = [...shown.values()].sort((a, b) => a.name.localeCompare(b.name));
  const options = channels.map((s) => el("option", { value: s.stream_id }, "#" + s.name));
  if (lost) options.unshift(el("option", { value: "", disabled: true }, "Choose a channel"));
  f.channel.replaceChildren(...options);
  f.channel.value = lost ? "" : chosen || f.channel.value;
}

/** Whether a message is being written: then moving to another view leaves its recipient alone. */
export function composing() {
  return f.content.value.trim() !== "";
}

/** Points the compose box at a narrow's conversation (keeps the text). */
export function composeFor(narrow) {
  const before = JSON.stringify(conversation());
  if (narrow.kind === "stream" || narrow.kind === "topic") {
    f.type.value = "stream";
    if (String(narrow.streamId) !== f.channel.value) f.topic.value = "";
    refreshChannels(String(narrow.streamId));
    if (narrow.kind === "topic") f.topic.value = narrow.topic;
  } else if (narrow.kind === "dm") {
    f.type.value = "private";
    const ids = narrow.userIds.length ? narrow.userIds : [state.me.user_id];
    f.to.value = ids.map((id) => (state.users.get(id) || {}).email || "").filter(Boolean).join(", ");
  }
  syncType();
  if (JSON.stringify(conversation()) !== before) conversationChanged();
}

function setConversation(draft) {
  if (draft.type === "stream") composeFor({ kind: "topic", streamId: draft.to[0], topic: draft.topic });
  else if (draft.type === "private") composeFor({ kind: "dm", userIds: draft.to.filter((id) => id !== state.me.user_id) });
}

/** The message to send, or null (after a toast saying what is missing) when the form is incomplete. */
function validParams() {
  try {
    return messageParams();
  } catch (err) {
    toast(err.message, "error");
    return null;
  }
}

async function send() {
  const params = validParams();
  if (!params) return;
  // The box empties at once (as Zulip's does) and gets its text back if the server refuses it.
  f.send.disabled = true;
  f.content.value = "";
  try {
    await api("POST", "/messages", params);
    discardDraft();
    scrollToBottom();
  } catch (err) {
    if (!f.content.value) f.content.value = params.content;
    toast("Not sent: " + err.message, "error");
  } finally {
    f.send.disabled = false;
    f.content.focus();
  }
}

function sendLater() {
  const params = validParams();
  if (!params) return;
  schedulePicker(f.laterPanel, async (timestamp) => {
    f.content.value = "";
    try {
      await scheduleMessage(params, timestamp);
    } catch (err) {
      if (!f.content.value) f.content.value = params.content;
      throw err;
    }
    discardDraft();
  });
}

function insertText(text) {
  const box = f.content;
  const start = box.selectionStart ?? box.value.length;
  const end = box.selectionEnd ?? start;
  box.value = box.value.slice(0, start) + text + box.value.slice(end);
  box.selectionStart = box.selectionEnd = start + text.length;
  box.focus();
  draftChanged();
}

/** Builds the compose form once. */
export function createCompose() {
  f.type = el(
    "select", { "data-testid": "compose-type", "aria-label": "Message type", class: "compose-type" },
    el("option", { value: "stream" }, "Channel"),
    el("option", { value: "private" }, "Direct message"),
  );
  f.channel = el("select", { "data-testid": "compose-channel", "aria-label": "Channel" });
  f.topic = el("input", { type: "text", "data-testid": "compose-topic", "aria-label": "Topic", placeholder: "Topic", maxlength: 60 });
  f.to = el("input", { type: "text", "data-testid": "compose-to", "aria-label": "Recipients (emails, comma-separated)", placeholder: "Emails, comma-separated", list: "compose-people" });
  f.people = el("datalist", { id: "compose-people" });
  f.streamFields = el("div", { class: "compose-fields" }, f.channel, f.topic);
  f.dmFields = el("div", { class: "compose-fields", hidden: true }, f.to, f.people);
  f.content = el("textarea", { "data-testid": "compose-content", "aria-label": "Message", placeholder: "Message (Enter sends, Shift+Enter for a new line)", rows: 2 });
  f.send = el("button", { type: "submit", class: "primary", "data-testid": "compose-send" }, "Send");
  const later = el("button", { type: "button", "data-testid": "compose-send-later", "aria-haspopup": "true" }, "Send later");
  const scheduled = el("button", { type: "button", "data-testid": "scheduled-open" }, "Scheduled");
  const snippets = el("button", { type: "button", "data-testid": "snippet-open" }, "Snippets");
  const drafts = el("button", { type: "button", "data-testid": "drafts-open" }, "Drafts");
  f.laterPanel = el("div", { class: "later-panel", hidden: true });
  const form = el(
    "form", { class: "compose", "aria-label": "Compose" },
    el("div", { class: "compose-row" }, f.type, f.streamFields, f.dmFields),
    f.content,
    f.laterPanel,
    el("div", { class: "compose-buttons" }, f.send, later, scheduled, snippets, drafts),
  );
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    send();
  });
  f.content.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      send();
    }
  });
  f.content.addEventListener("input", draftChanged);
  f.type.addEventListener("change", () => {
    syncType();
    conversationChanged();
  });
  for (const input of [f.channel, f.topic, f.to]) input.addEventListener("change", conversationChanged);
  for (const input of [f.topic, f.to]) input.addEventListener("input", debounce(conversationChanged, 300));
  later.addEventListener("click", sendLater);
  scheduled.addEventListener("click", openScheduled);
  snippets.addEventListener("click", () => openSnippets(insertText));
  drafts.addEventListener("click", openDrafts);
  bindCompose({
    conversation, setConversation, content: () => f.content.value,
    setContent: (text) => (f.content.value = text),
    setTopic: (topic) => (f.topic.value = topic),
    focus: () => f.content.focus(),
  });
  return form;
}

/** Refreshes the choices that depend on state (channels, people). */
export function refreshCompose() {
  refreshChannels();
  const people = [...state.users.values()].filter((u) => u.is_active !== false && !u.is_bot);
  f.people.replaceChildren(...people.map((u) => el("option", { value: u.email }, userName(u.user_id))));
}

// One message's element: sender, avatar or initials, time, the server's HTML, markers, reactions, actions.
import { api } from "./api.js";
import { openEmojiPicker, reactionFace } from "./emoji.js";
import { state } from "./state.js";
import { el, formatDate, formatTime, initials, openDialog, toast } from "./ui.js";

function sameOrigin(url) {
  try {
    return new URL(url, location.href).origin === location.origin;
  } catch {
    return false;
  }
}

function avatar(message) {
  const user = state.users.get(message.sender_id);
  const url = message.avatar_url || (user && user.avatar_url);
  if (url && sameOrigin(url)) return el("img", { class: "avatar", src: url, alt: "", width: 36, height: 36 });
  return el(
    "div",
    { class: `avatar initials avatar-color-${message.sender_id % 8}`, "aria-hidden": "true" },
    initials(message.sender_full_name),
  );
}

/** The server-rendered HTML, inserted as the server sanitized it (the one innerHTML of the client). */
function contentElement(message) {
  const content = el("div", { class: "message-content rendered", "data-testid": "message-content" });
  content.innerHTML = message.match_content || message.content;
  return content;
}

function markers(message) {
  const parts = [];
  if (message.last_edit_timestamp)
    parts.push(el("span", { class: "marker", "data-testid": "message-edited", title: "Edited " + formatDate(message.last_edit_timestamp) + " " + formatTime(message.last_edit_timestamp) }, "(edited)"));
  if (message.last_moved_timestamp)
    parts.push(el("span", { class: "marker", "data-testid": "message-moved", title: "Moved " + formatDate(message.last_moved_timestamp) + " " + formatTime(message.last_moved_timestamp) }, "(moved)"));
  return parts;
}

function actionButton(label, testid, onClick, extra = {}) {
  const { text, ...attrs } = extra;
  return el(
    "button",
    { type: "button", class: "icon-button", "data-testid": testid, "aria-label": label, title: label, onclick: onClick, ...attrs },
    text || label,
  );
}

const EDIT_GRACE_SECONDS = 20; // Zulip's allowance past the limit for an edit started in time

function withinLimit(message, limit) {
  return limit === null || limit === undefined || Date.now() / 1000 - message.timestamp < limit + EDIT_GRACE_SECONDS;
}

/** Zulip shows the edit action only while the realm lets the author edit the content. */
function canEdit(message) {
  return state.realm.realm_allow_message_editing !== false && withinLimit(message, state.realm.realm_message_content_edit_limit_seconds);
}

function canDelete(message) {
  return withinLimit(message, state.realm.realm_message_content_delete_limit_seconds);
}

/** Builds the <article> of a message. */
export function buildMessage(message, narrow) {
  const flags = message.flags || [];
  const mine = message.sender_id === state.me.user_id;
  const starred = flags.includes("starred");
  const article = el("article", {
    class: "message" + (mine ? " mine" : "") + (flags.some((f) => f.endsWith("mentioned")) ? " mentioned" : ""),
    "data-testid": "message",
    "data-message-id": message.id,
    "data-read": flags.includes("read") ? "true" : "false",
    "aria-label": `Message from ${message.sender_full_name}`,
  });
  const star = actionButton(starred ? "Unstar" : "Star", "star-button", () => toggleStar(message, star), {
    "aria-pressed": String(starred), text: starred ? "★" : "☆",
  });
  const actions = el(
    "div",
    { class: "message-actions" },
    actionButton("Add reaction", "react-button", (e) => openEmojiPicker(e.currentTarget, (emoji) => addReaction(message, emoji)), { text: "☺+" }),
    star,
    mine && canEdit(message) ? actionButton("Edit", "edit-button", () => startEdit(article, message), { text: "✎" }) : null,
    mine && canDelete(message) ? actionButton("Delete", "delete-button", () => confirmDelete(message), { text: "✕" }) : null,
  );
  article.append(
    avatar(message),
    el(
      "div",
      { class: "message-main" },
      el(
        "div",
        { class: "message-header" },
        el("span", { class: "message-sender", "data-testid": "message-sender" }, message.sender_full_name),
        el("time", {
          class: "message-time", "data-testid": "message-time",
          datetime: new Date(message.timestamp * 1000).toISOString(),
          title: formatDate(message.timestamp) + " " + formatTime(message.timestamp),
        }, formatTime(message.timestamp)),
        markers(message),
      ),
      contentElement(message),
      el("div", { class: "reactions" }),
    ),
    actions,
  );
  renderReactions(article, message);
  return article;
}

export function setStarred(article, on) {
  const button = article.querySelector('[data-testid="star-button"]');
  if (!button) return;
  button.setAttribute("aria-pressed", String(on));
  button.textContent = on ? "★" : "☆";
  button.setAttribute("aria-label", on ? "Unstar" : "Star");
  button.title = on ? "Unstar" : "Star";
}

async function toggleStar(message, button) {
  const on = button.getAttribute("aria-pressed") !== "true";
  try {
    await api("POST", "/messages/flags", { messages: [message.id], op: on ? "add" : "remove", flag: "starred" });
  } catch (err) {
    toast("Could not star the message: " + err.message, "error");
  }
}

/** Groups reactions by emoji and draws them as toggle buttons. */
export function renderReactions(article, message) {
  const box = article.querySelector(".reactions");
  const groups = new Map();
  for (const r of message.reactions || []) {
    const key = `${r.reaction_type}:${r.emoji_code}`;
    if (!groups.has(key)) groups.set(key, { ...r, users: [] });
    groups.get(key).users.push(r.user_id);
  }
  const buttons = [...groups.values()].map((g) => {
    const mine = g.users.includes(state.me.user_id);
    const names = g.users.map((id) => (state.users.get(id) || { full_name: "Someone" }).full_name).join(", ");
    return el(
      "button",
      {
        type: "button", class: "reaction" + (mine ? " mine" : ""), "data-testid": "reaction",
        "data-emoji-name": g.emoji_name, "aria-pressed": String(mine),
        title: `${names} reacted with :${g.emoji_name}:`, "aria-label": `:${g.emoji_name}: ${g.users.length}`,
        onclick: () => (mine ? removeReaction(message, g) : addReaction(message, g)),
      },
      reactionFace(g),
      el("span", { class: "reaction-count" }, String(g.users.length)),
    );
  });
  box.replaceChildren(...buttons);
}

function addReaction(message, emoji) {
  return react("POST", message, emoji, "add");
}

function removeReaction(message, emoji) {
  return react("DELETE", message, emoji, "remove");
}

async function react(method, message, emoji, verb) {
  try {
    await api(method, `/messages/${message.id}/reactions`, {
      emoji_name: emoji.emoji_name, emoji_code: emoji.emoji_code, reaction_type: emoji.reaction_type,
    });
  } catch (err) {
    toast(`Could not ${verb} the reaction: ` + err.message, "error");
  }
}

async function startEdit(article, message) {
  if (article.classList.contains("editing")) return;
  let raw;
  try {
    raw = (await api("GET", `/messages/${message.id}`, { apply_markdown: false })).raw_content;
  } catch (err) {
    toast("Could not load the message: " + err.message, "error");
    return;
  }
  const content = article.querySelector(".message-content");
  const box = el("textarea", { class: "edit-content", "data-testid": "edit-content", "aria-label": "Edit message", rows: 3 });
  box.value = raw;
  const save = el("button", { type: "button", class: "primary", "data-testid": "edit-save" }, "Save");
  const cancel = el("button", { type: "button", "data-testid": "edit-cancel" }, "Cancel");
  const form = el("div", { class: "edit-form" }, box, el("div", { class: "edit-buttons" }, save, cancel));
  article.classList.add("editing");
  content.hidden = true;
  content.after(form);
  function finish() {
    form.remove();
    content.hidden = false;
    article.classList.remove("editing");
    article.dispatchEvent(new CustomEvent("tornchat:edit-end"));
  }
  cancel.addEventListener("click", finish);
  box.addEventListener("keydown", (e) => {
    if (e.key === "Escape") finish();
    else if (e.key === "Enter" && !e.shiftKey) {
      e.preventDefault();
      save.click();
    }
  });
  save.addEventListener("click", async () => {
    save.disabled = true;
    try {
      if (box.value !== raw) await api("PATCH", `/messages/${message.id}`, { content: box.value });
      finish();
    } catch (err) {
      toast("Could not save the edit: " + err.message, "error");
      save.disabled = false;
    }
  });
  box.focus();
}

function confirmDelete(message) {
  const yes = el("button", { type: "button", class: "danger", "data-testid": "delete-confirm" }, "Delete");
  const no = el("button", { type: "button" }, "Cancel");
  const dialog = openDialog(
    "Delete message?",
    el("div", {}, el("p", {}, "This deletes the message for everyone."), el("div", { class: "dialog-buttons" }, no, yes)),
  );
  no.addEventListener("click", dialog.close);
  yes.addEventListener("click", async () => {
    try {
      await api("DELETE", `/messages/${message.id}`);
      dialog.close();
    } catch (err) {
      toast("Could not delete: " + err.message, "error");
    }
  });
}

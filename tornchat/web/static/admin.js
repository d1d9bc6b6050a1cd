// Channels and people: create and browse channels, personal subscription settings, and (administrators)
// new accounts and roles. Every change goes through the public API; the page's state catches up through
// the subscription, stream and realm_user events that events.js applies, which redraw these panels.
import { api } from "./api.js";
import { onChange, state } from "./state.js";
import { el, clear, openDialog, toast } from "./ui.js";

// Zulip's roles (PATCH /users/{id} role), most powerful first.
const ROLES = [
  [100, "Owner"],
  [200, "Administrator"],
  [300, "Moderator"],
  [400, "Member"],
  [600, "Guest"],
];
// The event types (state.js onChange kinds) that change what the panels show; "reload" is a re-register.
const PANEL_EVENTS = new Set(["subscription", "stream", "realm_user", "reload"]);
// No look-alike characters (0/O, 1/l/I): the password is read off a screen and typed once.
const PASSWORD_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789";
const PASSWORD_LENGTH = 18; // about 105 bits

/** A random password from crypto.getRandomValues, without modulo bias (bytes past a multiple are drawn again). */
function generatePassword(length = PASSWORD_LENGTH) {
  const limit = 256 - (256 % PASSWORD_ALPHABET.length);
  let result = "";
  while (result.length < length) {
    for (const byte of crypto.getRandomValues(new Uint8Array(length * 2))) {
      if (byte < limit && result.length < length) result += PASSWORD_ALPHABET[byte % PASSWORD_ALPHABET.length];
    }
  }
  return result;
}

function showError(err) {
  toast(err && err.msg ? err.msg : String(err), "error");
}

/** Runs an API call from a button: disabled while it runs, errors shown as messages. */
async function run(button, fn) {
  const hadFocus = button && document.activeElement === button;
  if (button) button.disabled = true; // a disabled control loses the focus: given back below
  try {
    return await fn();
  } catch (err) {
    showError(err);
    return undefined;
  } finally {
    if (button) button.disabled = false;
    if (hadFocus && button.isConnected && isFocusLost()) button.focus();
  }
}

function isFocusLost() {
  return !document.activeElement || document.activeElement === document.body;
}

/** Opens a dialog whose body render() redraws after each event that changes it, until it closes. */
function liveDialog(title, testid, render) {
  const body = el("div", { class: "admin-panel" });
  let stop = null;
  let last = null; // where the keyboard last was in the panel: { row, testid }
  body.addEventListener("focusin", (event) => {
    const row = event.target.closest("li[data-stream-id], li[data-user-id]");
    last = { row: row && rowSelector(row), testid: event.target.getAttribute("data-testid") };
  });
  const dialog = openDialog(title, body, { testid, onClose: () => stop && stop() });
  const refresh = () => {
    render(body, refresh);
    // A control drawn again (or disabled while its request ran) drops the focus: put it back on the
    // same row's control (a Subscribe button becomes Unsubscribe), else on the same control.
    if (!last || !isFocusLost()) return;
    const again = last.row
      ? body.querySelector(`${last.row} button, ${last.row} select`)
      : last.testid && body.querySelector(`[data-testid="${last.testid}"]`);
    if (again) again.focus();
  };
  refresh();
  // Only what these panels show: a message arriving must not rebuild a list under the pointer.
  stop = onChange((kind) => {
    if (PANEL_EVENTS.has(kind)) refresh();
  });
  return dialog;
}

function rowSelector(row) {
  return row.hasAttribute("data-stream-id")
    ? `li[data-stream-id="${row.dataset.streamId}"]`
    : `li[data-user-id="${row.dataset.userId}"]`;
}

let fieldCount = 0;

/** A label above its control, tied by id (style.css's .snippet-form stacks them in a column). */
function field(text, control) {
  control.id = `admin-field-${++fieldCount}`;
  return [el("label", { for: control.id }, text), control];
}

function sortedUsers() {
  return [...state.users.values()]
    .filter((u) => u.is_active !== false && !u.is_bot)
    .sort((a, b) => a.full_name.localeCompare(b.full_name));
}

// -- channels -----------------------------------------------------------------------------------

function channelForm() {
  const name = el("input", { type: "text", required: true, maxlength: 60, "data-testid": "channel-create-name" });
  const description = el("input", { type: "text", maxlength: 1024, "data-testid": "channel-create-description" });
  const isPrivate = el("input", { type: "checkbox", "data-testid": "channel-create-private" });
  const members = el(
    "select",
    { multiple: true, size: 5, "data-testid": "channel-create-members" },
    sortedUsers().map((u) =>
      el("option", { value: u.user_id, selected: state.me && u.user_id === state.me.user_id }, `${u.full_name} <${u.email}>`),
    ),
  );
  const submit = el("button", { type: "submit", class: "primary", "data-testid": "channel-create-submit" }, "Create channel");
  const form = el(
    "form",
    { class: "snippet-form admin-form" },
    el("h3", {}, "Create a channel"),
    field("Name", name),
    field("Description", description),
    el("label", { class: "checkbox" }, isPrivate, " Private: only its members see it"),
    field("Members (Ctrl or Shift to choose several)", members),
    el("div", { class: "item-buttons" }, submit),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const subscribers = [...members.selectedOptions].map((o) => Number(o.value));
    const done = await run(submit, () =>
      api("POST", "/channels/create", {
        name: name.value.trim(),
        description: description.value,
        invite_only: isPrivate.checked,
        subscribers,
      }),
    );
    if (done) {
      toast(`Channel #${name.value.trim()} created.`, "success");
      form.reset();
    }
  });
  return form;
}

function channelRow(stream) {
  const subscribed = state.subscriptions.has(stream.stream_id);
  const button = subscribed
    ? el("button", { type: "button", "data-testid": "channel-unsubscribe" }, "Unsubscribe")
    : el("button", { type: "button", "data-testid": "channel-subscribe" }, "Subscribe");
  button.addEventListener("click", () =>
    run(button, () =>
      subscribed
        ? api("DELETE", "/users/me/subscriptions", { subscriptions: [stream.name] })
        : api("POST", "/users/me/subscriptions", { subscriptions: [{ name: stream.name }] }),
    ),
  );
  return el(
    "li",
    { class: "item channel-row", "data-testid": "channel-row", "data-stream-id": stream.stream_id },
    el("div", { class: "item-title" }, (stream.invite_only ? "🔒 " : "#") + stream.name),
    stream.description ? el("div", { class: "item-text" }, stream.description) : null,
    el("div", { class: "item-buttons" }, button),
  );
}

/** The channels dialog: a form to create one, and every channel the user can see, to join or leave. */
export function openChannels() {
  const known = new Map();
  let refresh = null;
  const dialog = liveDialog("Channels", "channels-dialog", (body, again) => {
    refresh = again;
    if (!body.querySelector("form.admin-form")) body.appendChild(channelForm()); // kept: half-typed input
    const streams = new Map([...known, ...state.streams]);
    const rows = [...streams.values()]
      .filter((s) => !s.is_archived)
      .sort((a, b) => a.name.localeCompare(b.name))
      .map(channelRow);
    if (!body.querySelector("h3.channel-list-title")) body.appendChild(el("h3", { class: "channel-list-title" }, "All channels"));
    const list = body.querySelector("ul.channel-list") || body.appendChild(el("ul", { class: "item-list channel-list" }));
    clear(list).append(...(rows.length ? rows : [el("li", { class: "muted-text" }, "No channels yet.")]));
  });
  // GET /streams may know public channels this page's state has not heard of yet.
  api("GET", "/streams", { include_public: true, include_subscribed: true })
    .then((data) => {
      for (const s of data.streams) known.set(s.stream_id, s);
      refresh();
    })
    .catch(showError);
  return dialog;
}

// -- one subscription's settings ------------------------------------------------------------------

/** Colour, mute and pin of one of my subscriptions (POST /users/me/subscriptions/properties). */
export function openSubscriptionSettings(streamId) {
  const sub = state.subscriptions.get(Number(streamId));
  if (!sub) {
    toast("You are not subscribed to this channel.", "error");
    return null;
  }
  const color = el("input", { type: "color", value: sub.color || "#c2c2c2", "data-testid": "sub-color" });
  const muted = el("input", { type: "checkbox", checked: sub.is_muted, "data-testid": "sub-muted" });
  const pinned = el("input", { type: "checkbox", checked: sub.pin_to_top, "data-testid": "sub-pinned" });
  const save = el("button", { type: "submit", class: "primary", "data-testid": "sub-save" }, "Save");
  const form = el(
    "form",
    { class: "snippet-form admin-form" },
    sub.description ? el("p", { class: "item-text" }, sub.description) : null,
    field("Colour", color),
    el("label", { class: "checkbox" }, muted, " Muted: dimmed, and left out of All messages"),
    el("label", { class: "checkbox" }, pinned, " Pinned to the top of the sidebar"),
    el("div", { class: "item-buttons" }, save),
  );
  let dialog = null;
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const changes = [];
    if (color.value.toLowerCase() !== String(sub.color || "").toLowerCase()) changes.push(["color", color.value]);
    if (muted.checked !== Boolean(sub.is_muted)) changes.push(["is_muted", muted.checked]);
    if (pinned.checked !== Boolean(sub.pin_to_top)) changes.push(["pin_to_top", pinned.checked]);
    const subscription_data = changes.map(([property, value]) => ({ stream_id: sub.stream_id, property, value }));
    const done = !changes.length || (await run(save, () => api("POST", "/users/me/subscriptions/properties", { subscription_data })));
    if (done) dialog.close();
  });
  dialog = openDialog(`#${sub.name}`, form, { testid: "subscription-settings" });
  return dialog;
}

// -- people (administrators) ----------------------------------------------------------------------

function userForm() {
  const email = el("input", { type: "email", required: true, "data-testid": "user-create-email" });
  const name = el("input", { type: "text", required: true, maxlength: 100, "data-testid": "user-create-name" });
  const submit = el("button", { type: "submit", class: "primary", "data-testid": "user-create-submit" }, "Create account");
  const shown = el("div", { class: "item-editor admin-password", "aria-live": "polite" });
  const form = el(
    "form",
    { class: "snippet-form admin-form" },
    el("h3", {}, "Create an account"),
    field("Email", email),
    field("Full name", name),
    el("div", { class: "item-buttons" }, submit),
    shown,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clear(shown);
    const password = generatePassword();
    const done = await run(submit, () =>
      api("POST", "/users", { email: email.value.trim(), full_name: name.value.trim(), password }),
    );
    if (!done) return;
    // Shown this once: the server keeps only its hash, and nothing here stores it.
    shown.append(
      el("p", {}, `Account created for ${email.value.trim()}. Their initial password (shown once, copy it now):`),
      el("input", { type: "text", readonly: true, value: password, "data-testid": "user-create-password" }),
    );
    form.querySelector("[data-testid=user-create-password]").select();
    email.value = "";
    name.value = "";
  });
  return form;
}

function roleSelect(user) {
  const select = el(
    "select",
    { "data-testid": "user-role", "aria-label": `Role of ${user.full_name}` },
    ROLES.map(([value, label]) => el("option", { value, selected: value === user.role }, label)),
  );
  select.addEventListener("change", async () => {
    const role = Number(select.value);
    const done = await run(select, () => api("PATCH", `/users/${user.user_id}`, { role }));
    if (done) toast(`${user.full_name} is now ${ROLES.find(([v]) => v === role)[1].toLowerCase()}.`, "success");
    else select.value = String(user.role); // refused: show the role the user still has
  });
  return select;
}

/** The people dialog (administrators): create accounts and change roles. */
export function openPeople() {
  return liveDialog("People", "people-dialog", (body) => {
    if (!body.querySelector("form.admin-form")) body.appendChild(userForm());
    const rows = sortedUsers().map((user) =>
      el(
        "li",
        { class: "item item-row user-row", "data-testid": "user-row", "data-user-id": user.user_id },
        el("div", { class: "item-text" }, `${user.full_name} <${user.email}>`),
        roleSelect(user),
      ),
    );
    if (!body.querySelector("h3.user-list-title")) body.appendChild(el("h3", { class: "user-list-title" }, "Roles"));
    const list = body.querySelector("ul.user-list") || body.appendChild(el("ul", { class: "item-list user-list" }));
    // A re-render while a role select is open would close it: keep the list if nothing changed.
    const signature = JSON.stringify(sortedUsers().map((u) => [u.user_id, u.full_name, u.email, u.role]));
    if (list.dataset.signature === signature) return;
    list.dataset.signature = signature;
    clear(list).append(...rows);
  });
}

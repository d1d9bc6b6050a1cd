// The sign-in form: POST /fetch_api_key with email and password.
import { api, ApiError, saveAuth } from "./api.js";
import { el } from "./ui.js";

function errorText(err) {
  if (!(err instanceof ApiError)) return "Sign-in failed.";
  if (err.code === "RATE_LIMIT_HIT" || err.status === 429) {
    const wait = Math.ceil(Number(err.body["retry-after"]) || 0);
    if (wait <= 0) return "Too many sign-in attempts. Try again later.";
    return `Too many sign-in attempts. Try again in ${wait} second${wait === 1 ? "" : "s"}.`;
  }
  if (err.status === 0) return "Cannot reach the server. Check your connection and try again.";
  return err.msg || "Sign-in failed.";
}

/** Renders the sign-in form into root; calls onSignedIn() once a key is saved. */
export function renderLogin(root, onSignedIn, notice = "") {
  const email = el("input", {
    id: "login-email", type: "email", name: "email", autocomplete: "username", required: true,
    "data-testid": "login-email",
  });
  const password = el("input", {
    id: "login-password", type: "password", name: "password", autocomplete: "current-password", required: true,
    "data-testid": "login-password",
  });
  const remember = el("input", { id: "login-remember", type: "checkbox", "data-testid": "login-remember" });
  const error = el("p", { class: "login-error", role: "alert", "data-testid": "login-error", hidden: true });
  const submit = el("button", { type: "submit", class: "primary", "data-testid": "login-submit" }, "Sign in");
  const form = el(
    "form",
    { class: "login-form", novalidate: true },
    el("h1", {}, "Sign in to Tornchat"),
    notice ? el("p", { class: "login-notice" }, notice) : null,
    el("label", { for: "login-email" }, "Email"),
    email,
    el("label", { for: "login-password" }, "Password"),
    password,
    el("label", { class: "checkbox", for: "login-remember" }, remember, " Remember me on this device"),
    error,
    submit,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    error.hidden = true;
    if (!email.value.trim() || !password.value) {
      showError("Enter your email and password.");
      return;
    }
    submit.disabled = true;
    try {
      const data = await api("POST", "/fetch_api_key", { username: email.value.trim(), password: password.value }, {
        noAuth: true,
      });
      saveAuth(data.email, data.api_key, remember.checked);
      password.value = "";
      onSignedIn();
    } catch (err) {
      showError(errorText(err));
    } finally {
      submit.disabled = false;
    }
  });
  function showError(text) {
    error.textContent = text;
    error.hidden = false;
  }
  root.replaceChildren(el("main", { class: "login-page" }, form));
  email.focus();
}

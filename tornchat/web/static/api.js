// The one door to tornchat's public API (/api/v1): form-encoded requests, HTTP Basic auth.
const STORE_KEY = "tornchat.auth";

export class ApiError extends Error {
  constructor(code, msg, status, body = {}) {
    super(msg);
    this.name = "ApiError";
    this.code = code;
    this.msg = msg;
    this.status = status;
    this.body = body;
  }
}

let auth = null;
let remembered = false; // the key came from localStorage ("remember me"), shared by the device's tabs

/** Loads the saved credentials (tab session first, then "remember me"). */
export function loadAuth() {
  for (const store of [sessionStorage, localStorage]) {
    try {
      const raw = store.getItem(STORE_KEY);
      if (raw) {
        const value = JSON.parse(raw);
        if (value && value.email && value.api_key) {
          auth = value;
          remembered = store === localStorage;
          return auth;
        }
      }
    } catch {
      store.removeItem(STORE_KEY);
    }
  }
  return null;
}

export function currentAuth() {
  return auth;
}

/** Keeps the key for this tab only, or also in localStorage when remember is true. */
export function saveAuth(email, apiKey, remember) {
  auth = { email, api_key: apiKey };
  remembered = Boolean(remember);
  // A remembered key replaces the device's in place: no removal for other tabs to take as a sign-out.
  if (remember) sessionStorage.removeItem(STORE_KEY);
  else clearStored();
  (remember ? localStorage : sessionStorage).setItem(STORE_KEY, JSON.stringify(auth));
}

function clearStored() {
  sessionStorage.removeItem(STORE_KEY);
  localStorage.removeItem(STORE_KEY);
}

/** Forgets the key; shared=false leaves localStorage alone (another tab signed out, or in again). */
export function forgetAuth(shared = true) {
  auth = null;
  remembered = false;
  if (shared) clearStored();
  else sessionStorage.removeItem(STORE_KEY);
}

/** fn() runs when another tab signs out of the remembered key this tab uses (it removed it from localStorage). */
export function onSignedOutElsewhere(fn) {
  window.addEventListener("storage", (event) => {
    if (event.storageArea !== localStorage || (event.key !== STORE_KEY && event.key !== null)) return;
    if (auth && remembered && !localStorage.getItem(STORE_KEY)) fn();
  });
}

function encodeParams(params) {
  const body = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined || value === null) continue;
    body.append(key, typeof value === "object" ? JSON.stringify(value) : String(value));
  }
  return body;
}

function basicHeader(email, key) {
  const bytes = new TextEncoder().encode(`${email}:${key}`);
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return "Basic " + btoa(binary);
}

/**
 * Calls /api/v1<path>. Resolves the parsed JSON body on success; throws ApiError otherwise
 * (network failures become ApiError with code "NETWORK_ERROR" and status 0).
 * options.signal aborts the request; options.noAuth skips the Authorization header.
 */
export async function api(method, path, params = {}, options = {}) {
  method = method.toUpperCase();
  const body = encodeParams(params);
  let url = "/api/v1" + path;
  const init = { method, headers: {}, signal: options.signal, credentials: "same-origin" };
  if (method === "GET" || method === "HEAD") {
    const query = body.toString();
    if (query) url += "?" + query;
  } else {
    init.body = body;
  }
  if (auth && !options.noAuth) init.headers.Authorization = basicHeader(auth.email, auth.api_key);
  let response;
  try {
    response = await fetch(url, init);
  } catch (err) {
    if (err && err.name === "AbortError") throw err;
    throw new ApiError("NETWORK_ERROR", "Cannot reach the server.", 0);
  }
  let data = null;
  try {
    data = await response.json();
  } catch {
    data = null;
  }
  if (response.ok && data && data.result === "success") return data;
  const retryAfter = response.headers.get("Retry-After");
  const extra = data || {};
  if (retryAfter && extra["retry-after"] === undefined) extra["retry-after"] = Number(retryAfter);
  throw new ApiError(
    (data && data.code) || (response.status >= 500 ? "SERVER_ERROR" : "BAD_REQUEST"),
    (data && data.msg) || `Server error (${response.status}).`,
    response.status,
    extra,
  );
}

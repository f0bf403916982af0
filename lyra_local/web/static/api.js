/* The server: JSON calls, server-sent events over fetch, downloads; the API token when the server asks for
 * it (401 "unauthorized"), the login when it asks who this is (401 "login_required", login.js). */
import { $, el } from "./dom.js";

let loginRequired = () => new Promise(() => {});  // login.js shows its page; the app reloads once logged in

/* ``handler()`` is called when the server answers that nobody is logged in here (no session, or it ended). */
export function whenLoginRequired(handler) {
  loginRequired = handler;
}

let pagePerson = null;  // whose page this is, once known: every request says so (the server refuses a mismatch)

/* This page belongs to person ``id``: a request sent after someone else logged in on this browser (another
 * tab) is refused by the server (409 "PersonChanged") instead of acting on that person's memory. */
export function setPagePerson(id) {
  pagePerson = id;
}

export function headers(extra = {}) {
  const token = localStorage.getItem("lyra-token");
  const own = pagePerson ? { ...extra, "X-Lyra-Person": pagePerson } : extra;
  return token ? { ...own, Authorization: `Bearer ${token}` } : own;
}

/* Someone else logged in on this browser since this page loaded: the page is theirs to reload. */
function personChanged(resp) {
  if (resp.status !== 409 || resp.headers.get("x-lyra-person-changed") !== "1") return false;
  location.reload();
  return true;
}

/* One JSON call; an answer that is not 2xx throws an Error carrying the server's message and hint, and
 * its HTTP ``status`` (a 404: what it names is gone, perhaps forgotten in another tab). */
export async function api(path, options = {}) {
  const init = { ...options, headers: headers(options.body ? { "Content-Type": "application/json" } : {}) };
  if (options.body && typeof options.body !== "string") init.body = JSON.stringify(options.body);
  const resp = await fetch(path, init);
  if (resp.status === 401 && await retryAfter401(resp)) return api(path, options);
  if (personChanged(resp)) return new Promise(() => {});
  const type = resp.headers.get("content-type") || "";
  const data = type.includes("json") ? await resp.json() : type.startsWith("text/plain") ? await resp.text() : null;
  if (!resp.ok) throw failure(data, resp);
  return data;
}

/* A 401: the login when the server asks who this is (nothing is retried: the app reloads once logged in), else
 * the API token; resolves to whether to ask again. */
async function retryAfter401(resp) {
  const data = await resp.clone().json().catch(() => null);
  if (data?.error?.type === "login_required") {
    await loginRequired();
    return false;
  }
  return askToken();
}

/* The Error of an answer that is not 2xx: its message and hint, HTTP ``status`` and the error's ``type``. */
function failure(data, resp) {
  return Object.assign(new Error(describe(data, resp)), { status: resp.status, type: data?.error?.type ?? null });
}

function describe(data, resp) {
  const err = data && (data.error || data.detail);
  if (err && err.message) return err.hint ? `${err.message} — ${err.hint}` : err.message;
  if (Array.isArray(err)) return err.map((e) => e.msg).join("; ");
  return `${resp.status} ${resp.statusText}`;
}

/* Server-sent events over fetch (EventSource cannot send the API token). */
export async function sse(path, init, onEvent) {
  const resp = await fetch(path, { ...init, headers: headers(init.body ? { "Content-Type": "application/json" } : {}) });
  if (resp.status === 401 && await retryAfter401(resp)) return sse(path, init, onEvent);
  if (personChanged(resp)) return new Promise(() => {});
  if (!resp.ok) throw failure(await resp.json().catch(() => null), resp);
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let cut;
    while ((cut = buffer.search(/\r?\n\r?\n/)) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut).replace(/^\r?\n\r?\n/, "");
      let event = "message";
      const data = [];
      for (const line of block.split(/\r?\n/)) {
        if (line.startsWith("event:")) event = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (data.length) onEvent(event, JSON.parse(data.join("\n")));
    }
  }
}

/* A file sent as the request's body (an import), answered in JSON. */
export async function upload(path, file) {
  const resp = await fetch(path, { method: "PUT", body: file, headers: headers() });
  if (resp.status === 401 && await retryAfter401(resp)) return upload(path, file);
  if (personChanged(resp)) return new Promise(() => {});
  const body = await resp.json();
  if (!resp.ok) throw new Error(describe(body, resp));
  return body;
}

/* Saves what ``path`` answers under the name the server gives it. */
export async function download(path) {
  const resp = await fetch(path, { headers: headers() });
  if (resp.status === 401 && await retryAfter401(resp)) return download(path);
  if (!resp.ok) throw new Error(describe(await resp.json().catch(() => null), resp));
  const name = /filename="?([^";]+)"?/.exec(resp.headers.get("content-disposition") || "")?.[1] || "lyra-download";
  const url = URL.createObjectURL(await resp.blob());
  const a = el("a", { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

function askToken() {
  const dialog = $("token-dialog");
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => {
      const token = $("token-input").value.trim();
      if (token) localStorage.setItem("lyra-token", token);
      else localStorage.removeItem("lyra-token");  // none given: the next request goes without (a login, perhaps)
      resolve(Boolean(token));
    }, { once: true });
    dialog.showModal();
  });
}

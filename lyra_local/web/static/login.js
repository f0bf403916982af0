/* Who is using the page: the household's login (a name and a password, or a PIN for a child), shown when the
 * server says nobody is logged in here, and logging out. The page of one person never turns into another's: a
 * login, a log-out or a switch reloads the page, and the other tabs of this browser (whose cookie just changed)
 * reload too. What a tab left in its trash stays that person's (tabs.js keeps each record under its person). */
import { api, headers, setPagePerson, whenLoginRequired } from "./api.js";
import { $ } from "./dom.js";
import { setTabPerson } from "./tabs.js";
import { forgetTrashNow, keepTrashForLater } from "./trash.js";

// Tells this browser's other tabs that the person logged in here changed (a login, a log-out): they reload.
const tabsOfThisBrowser = typeof BroadcastChannel === "function" ? new BroadcastChannel("lyra-person") : null;

function tellOtherTabs() {
  tabsOfThisBrowser?.postMessage("changed");
}

/* The server's answer to "who is this?": GET /api/auth/state, then GET /api/me ({id, name, kind, owner,
 * has_secret, login_free}) once someone is. */
export const who = { state: null, me: null };

let shown = null;  // the login page's promise while it is shown: it never resolves (a login reloads the page)

/* Asks the server who this is. Resolves to true when someone is (the app may load), to false when the login is
 * shown because no API token was given; never while the login page waits (logging in reloads the page). */
export async function knowWho() {
  who.state = await api("/api/auth/state");
  // Who this is, as any request is answered: a login (the page never resolves this then), or an API token when
  // the server asks for one (server.api_token with one person: the dialog, as a one-person Lyra always asked).
  try {
    who.me = await api("/api/me");
  } catch (e) {
    if (e.status !== 401 || !who.state.login_required) throw e;
    showLogin();  // no API token given (the person chose to log in instead)
    return false;
  }
  setTabPerson(who.me.id, who.me.owner);
  setPagePerson(who.me.id);
  return true;
}

whenLoginRequired(() => showLogin());

/* The login page, over an empty page: nothing of the person who was here stays visible behind it, and what
 * waits in this tab's trash is kept for that person's next visit (forgetting it now would act as whoever logs
 * in next). Resolves never: a login reloads the page. */
export function showLogin() {
  if (shown) return shown;
  keepTrashForLater();
  document.body.classList.add("logged-out");
  const dialog = $("login-dialog");
  dialog.addEventListener("cancel", (e) => e.preventDefault());  // Esc does not uncover the page
  $("login-form").addEventListener("submit", (e) => {
    e.preventDefault();
    logIn();
  });
  $("login-pin").addEventListener("click", () => {
    const pin = $("login-secret").getAttribute("inputmode") !== "numeric";
    if (pin) $("login-secret").setAttribute("inputmode", "numeric");
    else $("login-secret").removeAttribute("inputmode");
    $("login-pin").textContent = pin ? "Use a keyboard (a password)" : "Use the number keys (a PIN)";
    $("login-secret").focus();
  });
  dialog.showModal();
  $("login-name").focus();
  shown = new Promise(() => {});
  return shown;
}

async function logIn() {
  const button = $("login-submit");
  const name = $("login-name").value.trim();
  const secret = $("login-secret").value;
  if (!name || !secret) return;
  button.disabled = true;
  try {
    const resp = await fetch("/api/auth/login", { method: "POST", headers: { "Content-Type": "application/json" },
                                                  body: JSON.stringify({ name, secret }) });
    if (resp.ok) {
      localStorage.removeItem("lyra-token");  // a stored owner's token would win over this person's login
      tellOtherTabs();
      window.location.reload();
      return;
    }
    const data = await resp.json().catch(() => null);
    loginError(refusal(resp, data));
    $("login-secret").select();
  } catch (e) {
    loginError(`The server did not answer (${e.message}). Is Lyra still running?`);
  }
  button.disabled = false;
}

/* Why a login was refused, in words a person can act on. */
function refusal(resp, data) {
  const type = data?.error?.type;
  if (resp.status === 429 || type === "rate_limited") {
    const wait = Number(resp.headers.get("Retry-After"));
    return "Too many wrong tries. For your safety, logging in is paused" +
      (Number.isFinite(wait) && wait > 0 ? `: try again in ${waitWords(wait)}.` : " for a while.");
  }
  if (type === "login_failed" || resp.status === 401) {
    return "That name and password (or PIN) do not match. Check both and try again.";
  }
  const err = data?.error;
  return err?.message ? (err.hint ? `${err.message} — ${err.hint}` : err.message) : `${resp.status} ${resp.statusText}`;
}

/* 40 → "40 seconds", 900 → "15 minutes", 61 → "2 minutes". */
export function waitWords(seconds) {
  if (seconds < 60) return `${Math.ceil(seconds)} second${Math.ceil(seconds) === 1 ? "" : "s"}`;
  const minutes = Math.ceil(seconds / 60);
  return `${minutes} minute${minutes === 1 ? "" : "s"}`;
}

function loginError(message) {
  $("login-error").textContent = message;
  $("login-error").hidden = !message;
}

/* Logs out here (``everywhere``: every session of this person, on every device), after forgetting what waits
 * in this tab's trash as the person asked (it could not be forgotten later by anyone else). */
export async function logOut({ everywhere = false } = {}) {
  await forgetTrashNow();
  try {
    await fetch(everywhere ? "/api/auth/logout-everywhere" : "/api/auth/logout", { method: "POST", headers: headers() });
  } finally {
    localStorage.removeItem("lyra-token");
    tellOtherTabs();
    window.location.reload();
  }
}

/* Another tab of this browser logged in, out or as someone else: this one reloads, so that nothing done here
 * lands in another person's memory (the cookie they share may be another person's already). */
tabsOfThisBrowser?.addEventListener("message", () => {
  keepTrashForLater();
  window.location.reload();
});

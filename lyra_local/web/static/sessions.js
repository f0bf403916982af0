/* The conversation list: grouped by date, searched by title; open, start, rename, delete (to a trash with
 * Undo); off the record; links that open a conversation. */
import { api } from "./api.js";
import { on } from "./bus.js";
import { currentId, replying, setCurrent, stopReplyAndWait, trackOpening } from "./conversation.js";
import { $, el, fragment } from "./dom.js";
import { confirmForget, showError } from "./feedback.js";
import { reloadMessages, renderMessages } from "./messages.js";

const D = window.LyraDates;

const LISTED = 1000;  // conversations the list loads (and its title search looks through)
const TRASH_S = 10;  // seconds a deleted conversation waits in the trash, with Undo, before it is forgotten
const TRASH_KEY = "lyra-trash";  // the ids waiting in the trash, in the browser's storage

let sessions = [];
const trash = new Map();  // id -> {session, timer}: deleted, not yet forgotten

const currentSession = () => sessions.find((s) => s.id === currentId()) || null;

export async function loadSessions() {
  if (localStorage.getItem(TRASH_KEY) && !trash.size) await forgetLeftovers();
  sessions = (await api(`/api/sessions?limit=${LISTED}`)).sessions;
  renderSessions();
}

/* The list grouped by last activity (Today, Yesterday, Previous 7 days, then by month), filtered by the
 * title search; a conversation in the trash is not listed. */
function renderSessions() {
  const list = $("session-list");
  $("conversation-title").textContent = currentSession()?.name || "";
  // A rename in progress keeps its field: it re-renders the list itself when it ends.
  if (list.querySelector("li[data-renaming]")) return;
  const query = $("session-filter").value.trim().toLocaleLowerCase();
  const shown = sessions.filter((s) => !trash.has(s.id) && (!query || s.name.toLocaleLowerCase().includes(query)));
  const groups = new Map();
  for (const s of shown) {
    const group = D.recencyGroup(s.updated_at);
    if (!groups.has(group)) groups.set(group, []);
    groups.get(group).push(s);
  }
  list.replaceChildren(fragment([...groups].map(([group, members]) => el("section", { class: "session-group" },
    el("h2", { class: "session-group-title", text: group }),
    el("ul", { class: "plain" }, fragment(members.map(sessionItem)))))));
  if (query && !shown.length) list.append(el("p", { class: "muted", text: "No conversation has that in its title." }));
}

function sessionItem(s) {
  const name = el("button", { class: "session-name", title: `${s.name} · ${D.momentLabel(s.updated_at)}`,
                              "aria-current": s.id === currentId() ? "true" : null,
                              onclick: () => selectSession(s.id) }, s.name,
                  s.remember === false ? el("span", { class: "badge off", text: "off the record" }) : null);
  const rename = el("button", { class: "icon-button", "aria-label": `Rename ${s.name}`, text: "✎",
                                onclick: () => startRename(item, s) });
  const remove = el("button", { class: "icon-button", "aria-label": `Delete ${s.name}`, text: "✕",
                                onclick: () => deleteSession(s) });
  const item = el("li", { class: s.id === currentId() ? "active" : "", "data-id": s.id }, name,
                  el("span", { class: "session-actions" }, rename, remove));
  return item;
}

function startRename(item, session) {
  const input = el("input", { value: session.name, "aria-label": "New name", maxlength: "200" });
  let done = false;
  const finish = async (save) => {
    if (done) return;
    done = true;
    delete item.dataset.renaming;
    if (save && input.value.trim() && input.value.trim() !== session.name) {
      try { await api(`/api/sessions/${session.id}`, { method: "PATCH", body: { name: input.value.trim() } }); }
      catch (e) { showError(e.message); }
    }
    await loadSessions();
  };
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter") { e.preventDefault(); finish(true); }
    if (e.key === "Escape") { e.preventDefault(); finish(false); }
  });
  input.addEventListener("blur", () => finish(true));
  item.dataset.renaming = "1";
  item.replaceChildren(input);
  input.focus();
  input.select();
}

/* Delete: an off-the-record conversation goes at once (nothing of it was remembered), after a question; any
 * other goes to the trash for TRASH_S seconds with Undo, then is forgotten (rows, vectors, what was built
 * from it) through the same DELETE. "Forget now" does not wait; leaving the page forgets what waits. */
async function deleteSession(session) {
  if (session.remember === false) {
    if (!await confirmForget("Forget this conversation?", `“${session.name}”: Nothing of it was remembered.`)) return;
    if (currentId() === session.id) await stopReplyAndWait();  // nothing of its reply is written after it goes
    return forgetSession(session);
  }
  if (currentId() === session.id) {
    await stopReplyAndWait();
    showBlank();
  }
  const row = el("div", { class: "trash-row", "data-id": session.id },
    el("span", { text: `“${session.name}” deleted.` }),
    el("button", { class: "link-button", text: "Undo", "aria-label": `Undo deleting ${session.name}`,
                   onclick: () => restore(session.id) }),
    el("button", { class: "link-button danger-link", text: "Forget now", "aria-label": `Forget ${session.name} now`,
                   onclick: () => emptyTrash(session.id) }));
  trash.set(session.id, { session, row, timer: setTimeout(() => emptyTrash(session.id), TRASH_S * 1000) });
  keepTrashList();
  $("trash").append(row);
  $("trash").hidden = false;
  renderSessions();
}

function restore(id) {
  const held = trash.get(id);
  if (!held) return;
  clearTimeout(held.timer);
  held.row.remove();
  trash.delete(id);
  keepTrashList();
  $("trash").hidden = trash.size === 0;
  renderSessions();
}

/* What waits in the trash is also written to the browser's storage (TRASH_KEY): a page killed before its
 * timers ran (a phone closing the tab, a crash) forgets it when it next opens, as it said it would. */
function keepTrashList() {
  if (trash.size) localStorage.setItem(TRASH_KEY, JSON.stringify([...trash.keys()]));
  else localStorage.removeItem(TRASH_KEY);
}

async function forgetLeftovers() {
  let ids = [];
  try { ids = JSON.parse(localStorage.getItem(TRASH_KEY) || "[]"); } catch { ids = []; }
  localStorage.removeItem(TRASH_KEY);
  for (const id of ids.filter(Number.isInteger)) {
    await api(`/api/sessions/${id}`, { method: "DELETE" }).catch(() => {});  // gone already: nothing to do
  }
}

async function emptyTrash(id) {
  const held = trash.get(id);
  if (!held) return;
  restore(id);  // off the trash's list; the forget below takes it off the conversations' list
  sessions = sessions.filter((s) => s.id !== id);
  renderSessions();
  await forgetSession(held.session);
}

async function forgetSession(session, keepalive = false) {
  try {
    await api(`/api/sessions/${session.id}`, { method: "DELETE", keepalive });
    if (currentId() === session.id) showBlank();
    await loadSessions();
  } catch (e) {
    showError(`“${session.name}” was not forgotten: ${e.message}`);
    await loadSessions().catch(() => {});
  }
}

/* No conversation on screen: the next message starts one, named after it. */
function showBlank() {
  setCurrent(null);
  renderSessions();
  renderMessages([]);
  showOffRecord();
}

/* Leaving an off-the-record conversation deletes it (the banner says so while it is open). */
async function leaveCurrent(nextId) {
  const leaving = currentSession();
  if (!leaving || leaving.remember !== false || leaving.id === nextId) return;
  await stopReplyAndWait();  // its reply stops first, so nothing of it is written after it is deleted
  try {
    await api(`/api/sessions/${leaving.id}`, { method: "DELETE" });
    sessions = sessions.filter((s) => s.id !== leaving.id);
  } catch (e) { showError(e.message); }
}

function showOffRecord() {
  const session = currentSession();
  const off = Boolean(session && session.remember === false);
  $("off-record-banner").hidden = !off;
  document.body.classList.toggle("off-record-mode", off);
}

/* Opens conversation ``id``, at turn ``turnId`` when given (a memory's source). */
export async function selectSession(id, turnId) {
  restore(id);  // opened from a link while in the trash: it is not deleted after all
  await leaveCurrent(id);
  setCurrent(id, sessions.find((s) => s.id === id)?.remember !== false);
  renderSessions();
  showOffRecord();
  closeSessionsOnNarrow();
  try { await reloadMessages(); } catch (e) { showError(e.message); }
  if (currentId() !== id) return;  // another conversation was opened while this one loaded
  const turn = turnId ? document.querySelector(`#messages li[data-id="${Number(turnId)}"]`) : null;
  if (turn) {  // opened from a memory's sources: show that turn
    turn.classList.add("highlight");
    turn.setAttribute("tabindex", "-1");
    turn.scrollIntoView({ block: "center" });
    turn.focus();
  } else {
    $("composer-input").focus();
  }
}

/* Opens the conversation the address names, then clears it, so that the same link opens it again. */
export async function openFromHash() {
  const where = new URLSearchParams(location.hash.slice(1));
  const id = Number(where.get("session"));
  if (!id) return false;
  history.replaceState(null, "", location.pathname + location.search);
  await selectSession(id, Number(where.get("turn")) || undefined);
  return true;
}

/* A new conversation; a message sent while it is being created waits for it (else it would go to the old one). */
export function newSession(name, remember = true) {
  return trackOpening((async () => {
    await leaveCurrent(null);
    const body = { ...(name ? { name } : {}), ...(remember ? {} : { remember: false }) };
    const session = await api("/api/sessions", { method: "POST", body });
    sessions.unshift(session);
    setCurrent(session.id, session.remember !== false);
    renderSessions();
    renderMessages([]);
    showOffRecord();
    return session;
  })());
}

function closeSessionsOnNarrow() {
  $("sessions").classList.remove("open");
  $("toggle-sessions").setAttribute("aria-expanded", "false");
}

/* Wires the list's own controls. */
export function wireSessions() {
  const focusComposer = () => $("composer-input").focus();
  // "+ New chat" makes no conversation yet: the first message does, named after it (so none stays empty)
  $("new-session").addEventListener("click", () => {
    leaveCurrent(null).then(() => { showBlank(); closeSessionsOnNarrow(); focusComposer(); })
      .catch((e) => showError(e.message));
  });
  $("new-off-record").addEventListener("click", () => newSession("Off the record", false).then(focusComposer)
    .catch((e) => showError(e.message)));
  $("toggle-sessions").addEventListener("click", () => {
    const open = $("sessions").classList.toggle("open");
    $("toggle-sessions").setAttribute("aria-expanded", String(open));
  });
  window.addEventListener("hashchange", () => openFromHash().catch((e) => showError(e.message)));
  $("session-filter").addEventListener("input", renderSessions);
  window.addEventListener("pagehide", () => {  // what waits in the trash is forgotten, as it said
    for (const [id, held] of trash) {
      clearTimeout(held.timer);
      held.row.remove();
      trash.delete(id);
      forgetSession(held.session, true);
    }
    $("trash").hidden = true;
  });
  window.addEventListener("pageshow", (e) => { if (e.persisted) loadSessions().catch(() => {}); });  // back again
  for (const name of ["turn-finished", "sessions-changed"]) on(name, () => loadSessions().catch(() => {}));
}

/* At start: the conversation the address names, else the latest, unless one was started meanwhile. */
export async function openFirst() {
  if (await openFromHash()) return;
  if (sessions.length && currentId() === null && !replying()) await selectSession(sessions[0].id);
}


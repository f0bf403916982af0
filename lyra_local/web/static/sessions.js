/* The conversation list: grouped by date, searched by title; open, start, rename, delete (to a trash with
 * Undo, trash.js); off the record; links that open a conversation. Other tabs of the page are respected
 * (tabs.js): what one tab deleted is not listed in another, and leaving an off-the-record conversation
 * deletes it only when no other tab has it open. */
import { api } from "./api.js";
import { on } from "./bus.js";
import {
  currentId, currentRemembered, namesKnown, replying, setCurrent, stopReplyAndWait, trackOpening,
} from "./conversation.js";
import { $, el, fragment } from "./dom.js";
import { confirmForget, showError, showNotice } from "./feedback.js";
import { appendMessage, reloadMessages, renderMessages } from "./messages.js";
import { alive, lastToLeave, onOthersChanged, trashedElsewhere } from "./tabs.js";
import { forgetOnServer, inTrash, putInTrash, sweepOtherTabs, takeOut, wireTrash } from "./trash.js";

const D = window.LyraDates;

const LISTED = 1000;  // conversations the list loads (and its title search looks through)

let sessions = [];

const currentSession = () => sessions.find((s) => s.id === currentId()) || null;

/* The list as the server has it, once what other tabs left to forget is forgotten. */
export async function loadSessions() {
  await alive;
  await sweepOtherTabs();
  const open = currentSession();
  sessions = (await api(`/api/sessions?limit=${LISTED}`)).sessions;
  renderSessions();
  if (open && currentId() === open.id) await closeIfDeleted(open);
}

/* The conversation open here went to another tab's trash, or is gone from the server (deleted in another tab
 * or by another client): closed here too, as the person asked there (a message sent here meanwhile would be
 * forgotten with it, or refused). */
async function closeIfDeleted(open) {
  const trashed = trashedElsewhere().has(open.id);
  if (!trashed && (sessions.some((s) => s.id === open.id) || sessions.length >= LISTED)) return;
  // not listed: perhaps only not yet (a conversation just created here); the server says whether it is gone
  if (!trashed && await api(`/api/sessions/${open.id}/messages?limit=1`).then(() => true, (e) => e.status !== 404)) {
    return;
  }
  await stopReplyAndWait();
  if (currentId() === open.id) closeDeleted(open.name, trashed ? "was deleted in another tab" : "was deleted");
}

/* Conversation ``id``, open here, is gone from the server (a message to it was refused with a 404). */
export function conversationGone(id) {
  if (currentId() === id) closeDeleted(currentSession()?.name || "This conversation", "was deleted");
}

/* The conversation open here was deleted elsewhere: none is open now, in the same record mode (the next
 * message starts a new one, off the record if it was). A message not sent stays on the page with Retry, and
 * what is in the message box stays. */
function closeDeleted(name, what) {
  const remember = currentRemembered();
  const unsent = [...document.querySelectorAll("#messages .message.unsent")];
  sessions = sessions.filter((s) => s.id !== currentId());
  showBlank(remember);
  for (const item of unsent) appendMessage(item);
  showNotice(`“${name}” ${what}.`);
}

/* The list grouped by last activity (Today, Yesterday, Previous 7 days, then by month), filtered by the
 * title search; a conversation in a trash (this tab's or another's) is not listed. */
function renderSessions() {
  const list = $("session-list");
  $("conversation-title").textContent = currentSession()?.name || "";
  // A rename in progress keeps its field: it re-renders the list itself when it ends.
  if (list.querySelector("li[data-renaming]")) return;
  const query = $("session-filter").value.trim().toLocaleLowerCase();
  const shown = sessions.filter((s) => !inTrash(s.id) && (!query || s.name.toLocaleLowerCase().includes(query)));
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
 * other goes to this tab's trash, with Undo (trash.js). */
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
  putInTrash(session);
}

async function forgetSession(session) {
  try {
    await forgetOnServer(session.id);
    if (currentId() === session.id) showBlank();
    await loadSessions();
  } catch (e) {
    showError(`“${session.name}” was not forgotten: ${e.message}`);
    await loadSessions().catch(() => {});
  }
}

/* No conversation on screen: the next message starts one, named after it (off the record: ``remember`` false). */
function showBlank(remember = true) {
  setCurrent(null, remember);
  renderSessions();
  renderMessages([]);
  showOffRecord();
}

/* Leaving an off-the-record conversation deletes it (the banner says so while it is open), unless another tab
 * has it open still: that tab deletes it when it leaves it. */
async function leaveCurrent(nextId) {
  const leaving = currentId();  // from what is open, not from the list, which another tab's change reloads
  if (leaving === null || currentRemembered() || leaving === nextId) return;
  await stopReplyAndWait();  // its reply stops first, so nothing of it is written after it is deleted
  try {
    if (await lastToLeave(leaving, () => forgetLeft(leaving))) {
      sessions = sessions.filter((s) => s.id !== leaving);
    }
  } catch (e) { showError(e.message); }
}

/* Deletes off-the-record conversation ``id``, as its banner promised: a busy server (5xx) or a dropped connection
 * is tried again for some 15 s before the person is told it is still there. */
async function forgetLeft(id) {
  for (let wait = 500; ; wait *= 2) {
    try {
      return await forgetOnServer(id);
    } catch (e) {
      if (wait > 8000 || (e.status && e.status < 500)) throw e;
    }
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
}

/* The banner while off the record: an off-the-record conversation is open, or none is and the next message
 * starts one (its conversation was deleted elsewhere while open here). */
function showOffRecord() {
  const off = !currentRemembered();
  $("off-record-banner").hidden = !off;
  document.body.classList.toggle("off-record-mode", off);
}

/* Opens conversation ``id``, at turn ``turnId`` when given (a memory's source). */
export async function selectSession(id, turnId) {
  takeOut(id);  // opened from a link while in the trash: it is not deleted after all
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
  window.addEventListener("hashchange", () => namesKnown.then(openFromHash).catch((e) => showError(e.message)));
  $("session-filter").addEventListener("input", renderSessions);
  wireTrash(renderSessions);
  onOthersChanged(() => loadSessions().catch(() => {}));  // a delete, an Undo or a forget in another tab
  window.addEventListener("pageshow", (e) => { if (e.persisted) loadSessions().catch(() => {}); });  // back again
  for (const name of ["turn-finished", "sessions-changed"]) on(name, () => loadSessions().catch(() => {}));
}

/* At start: the conversation the address names, else the latest, unless one was started meanwhile. */
export async function openFirst() {
  if (await openFromHash()) return;
  if (sessions.length && currentId() === null && !replying()) await selectSession(sessions[0].id);
}


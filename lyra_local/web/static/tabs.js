/* What one tab of the page keeps that the other tabs must respect. Every tab of an origin shares
 * localStorage, so a tab writes only under a key of its own, "lyra-tab:<id>" (a fresh id per page load): the
 * conversations waiting in its trash, each with the moment it is to be forgotten, and the off-the-record
 * conversation it has open. Another tab acts on that record only when its owner is provably gone (the Web
 * Lock the owner holds while its page lives can be taken) or when the owner's own promise has run out (a trash
 * entry's moment is GRACE_MS past: the owner's Undo ends at that moment). Where Web Locks are missing (plain
 * http on a LAN is not a secure context) the moment alone decides, and an off-the-record conversation another
 * tab says it has open is never deleted on leaving (the server's idle expiry removes it in the end).
 * In a household each record names its person (conversation ids are each person's own: another person's
 * conversation 5 is not this one's), and a tab reads only the records of the person it acts as.
 * This module never calls the server: it says what may be forgotten, and its callers forget it. */

const PREFIX = "lyra-tab:";
const OPEN_PREFIX = "lyra-off-record:";  // the shared lock each tab holds on the off-the-record conversation open in it
const LEGACY_KEY = "lyra-trash";  // the one list every tab shared before (a page of an older version may have left it)
const LEGACY_WAIT_MS = 10_000;  // that page's own trash time: by then it has forgotten (or restored) what it listed
const GRACE_MS = 5_000;  // past an entry's moment before another tab forgets it: its owner goes first
const LEAVE_WAIT_MS = 800;  // how long leaving waits to learn whether another tab has the conversation open
const STALE_MS = 24 * 3600 * 1000;  // without Web Locks, a record this old is a dead tab's
const LOADED_AT = Date.now();
const locks = navigator.locks || null;  // only in a secure context (localhost, https)

export const tabId = Array.from(crypto.getRandomValues(new Uint32Array(3)), (n) => n.toString(36)).join("");
const own = { trash: {}, open: null };  // id -> moment (ms) it is forgotten; the off-the-record id open here
let heldOpen = null;  // {id, release, released}: this tab's shared lock on that conversation
let person = { id: null, owner: true };  // whom this tab acts as (a record of an older version: the owner's)

/* This tab acts as person ``id`` (the household's owner when ``owner``): it reads only that person's records. */
export function setTabPerson(id, owner) {
  person = { id, owner: Boolean(owner) };
}

const ofThisPerson = (recordPerson) => recordPerson === person.id || (recordPerson == null && person.owner);
const openLock = (id) => `${OPEN_PREFIX}${person.id === null ? "" : `${person.id}:`}${id}`;

/* Resolves once this tab holds its own lock, held until the page is gone: records are written after it. */
export const alive = locks ? new Promise((resolve) => {
  locks.request(PREFIX + tabId, () => { resolve(); return new Promise(() => {}); }).catch(() => resolve());
}) : Promise.resolve();

function save() {
  try {
    if (!Object.keys(own.trash).length && own.open === null) localStorage.removeItem(PREFIX + tabId);
    else localStorage.setItem(PREFIX + tabId, JSON.stringify({ ...own, person: person.id, at: Date.now() }));
  } catch { /* storage full or refused: this tab's own timers still keep its promises while it lives */ }
}

/* This tab's trash, as {id: moment}: written at once, so that a later load can finish it if this page dies. */
export function keepTrash(moments) {
  own.trash = moments;
  save();
}

const validId = (id) => Number.isInteger(id) && id > 0;

function readRecord(key) {
  try {
    const raw = JSON.parse(localStorage.getItem(key) || "null");
    if (key === LEGACY_KEY) {
      const ids = Array.isArray(raw) ? raw.filter(validId) : [];
      return { trash: Object.fromEntries(ids.map((id) => [id, LOADED_AT + LEGACY_WAIT_MS])), open: null, at: 0 };
    }
    const trash = {};
    for (const [id, moment] of Object.entries(raw?.trash || {})) {
      if (validId(Number(id))) trash[id] = Number(moment) || 0;
    }
    return { trash, open: validId(raw?.open) ? raw.open : null, at: Number(raw?.at) || 0,
             person: typeof raw?.person === "string" ? raw.person : null };
  } catch {
    return { trash: {}, open: null, at: 0, person: null };  // unreadable: nothing in it can be acted on
  }
}

/* Every other tab's record of this tab's person: {key, owner (the tab; null: a page of an older version),
 * trash, open, at, person}. */
function others() {
  const found = [];
  for (let i = 0; i < localStorage.length; i++) {
    const key = localStorage.key(i);
    if (key === LEGACY_KEY) found.push({ key, owner: null, ...readRecord(key) });
    else if (key?.startsWith(PREFIX) && key !== PREFIX + tabId) {
      found.push({ key, owner: key.slice(PREFIX.length), ...readRecord(key) });
    }
  }
  return found.filter((r) => ofThisPerson(r.person));
}

/* The conversations waiting in another tab's trash: this tab does not list them. */
export function trashedElsewhere() {
  return new Set(others().flatMap((r) => Object.keys(r.trash).map(Number)));
}

/* Runs ``then`` holding the lock of tab ``owner`` when that tab is gone; resolves to whether it was. */
async function whenGone(owner, then) {
  if (!locks || owner === null) return false;
  try {
    return await locks.request(PREFIX + owner, { ifAvailable: true }, async (lock) => {
      if (!lock) return false;
      await then();
      return true;
    });
  } catch {
    return false;
  }
}

/* Another tab's trash, finished by this one: each of ``ids`` that ``forget(id)`` (resolving true once it is gone
 * from the server) could forget leaves the record; the rest stays for a later load. ``gone``: its owner is. */
async function finish(key, forget, ids, gone = false) {
  const record = readRecord(key);
  const left = {};
  let forgotten = 0;
  for (const [id, moment] of Object.entries(record.trash)) {
    if (ids.includes(Number(id)) && await forget(Number(id))) forgotten += 1;
    else left[id] = moment;
  }
  const claims = !gone && record.open !== null && Date.now() - record.at < STALE_MS;
  const keep = Object.keys(left).length || claims;
  // written only when something changed: every write tells every other tab, which sweeps in turn
  if (!keep) localStorage.removeItem(key);
  else if (!forgotten) return;
  else if (key === LEGACY_KEY) localStorage.setItem(key, JSON.stringify(Object.keys(left).map(Number)));
  else localStorage.setItem(key, JSON.stringify({ ...record, trash: left }));
}

/* Forgets, through ``forget(id)``, what other tabs left in their trash that this tab may forget now: all of a
 * gone tab's, and any entry whose moment is GRACE_MS past. Resolves to when to look again (ms), or null. */
export async function sweep(forget) {
  let next = null;
  for (const record of others()) {
    const ids = Object.keys(record.trash).map(Number);
    if (await whenGone(record.owner, () => finish(record.key, forget, ids, true))) continue;
    const now = Date.now();
    const due = [];
    for (const [id, moment] of Object.entries(record.trash)) {
      if (moment + GRACE_MS <= now) due.push(Number(id));
      else next = Math.min(next ?? Infinity, moment + GRACE_MS);
    }
    // a live owner's record is its own to write: it takes its entries off once it has forgotten them
    if (locks && record.owner !== null) for (const id of due) await forget(id);
    else await finish(record.key, forget, due);
  }
  return next;
}

/* This tab has off-the-record conversation ``id`` open (null: none); while it does, leaving it in another
 * tab does not delete it. */
export function holdOpen(id) {
  if (own.open === id) return;  // unchanged: no write (each one tells every other tab)
  heldOpen?.release();
  heldOpen = null;
  own.open = id;
  save();
  if (id === null || !locks) return;
  let release = () => {};
  const done = new Promise((resolve) => { release = resolve; });
  const released = locks.request(openLock(id), { mode: "shared" }, () => done).catch(() => {});
  heldOpen = { id, release, released };
}

/* Leaving off-the-record conversation ``id``: runs ``forget()`` (its deletion) only when no other tab has it
 * open; resolves to whether it ran. An error of ``forget`` is thrown. */
export async function lastToLeave(id, forget) {
  const mine = heldOpen?.id === id ? heldOpen : null;
  if (own.open === id) {
    own.open = null;
    save();
  }
  if (mine) {
    heldOpen = null;
    mine.release();
    await mine.released;
  }
  if (!locks) {
    const now = Date.now();
    if (others().some((r) => r.open === id && now - r.at < STALE_MS)) return false;
    await forget();
    return true;
  }
  try {
    return await locks.request(openLock(id), { signal: AbortSignal.timeout(LEAVE_WAIT_MS) }, async () => {
      await forget();
      return true;
    });
  } catch (e) {
    if (e?.name === "TimeoutError" || e?.name === "AbortError") return false;  // open in another tab: it stays
    throw e;
  }
}

/* Calls ``changed()`` when another tab's record changes (a delete, an Undo, a conversation opened or left). */
export function onOthersChanged(changed) {
  window.addEventListener("storage", (e) => {
    if (e.key === null || e.key === LEGACY_KEY || (e.key.startsWith(PREFIX) && e.key !== PREFIX + tabId)) changed();
  });
}

/* A page leaving keeps its trash's record (a later load finishes what its last requests did not) but not its
 * claim on an off-the-record conversation; back from the back/forward cache, it claims it again. */
window.addEventListener("pagehide", () => {
  own.open = null;
  save();
});
window.addEventListener("pageshow", (e) => {
  if (!e.persisted) return;
  own.open = heldOpen?.id ?? null;
  save();
});

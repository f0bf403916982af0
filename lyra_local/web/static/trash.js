/* The trash: a deleted conversation waits TRASH_S seconds with Undo and "Forget now", then is forgotten (rows,
 * vectors, what was built from it) through DELETE. The trash is this tab's: only the tab that deleted forgets,
 * at its moment, on "Forget now" or when the page is left. Each entry is also written to the browser's storage
 * (tabs.js), so that what a killed page left is forgotten by a later load, once that page is provably gone or
 * its moment long past; never earlier, so an Undo in the tab that deleted always finds the conversation. */
import { api } from "./api.js";
import { emit } from "./bus.js";
import { $, el } from "./dom.js";
import { showError } from "./feedback.js";
import { keepTrash, sweep, trashedElsewhere } from "./tabs.js";

const TRASH_S = 10;  // seconds a deleted conversation waits in the trash, with Undo, before it is forgotten

const held = new Map();  // id -> {session, row, timer, moment, forgetting}: deleted here, not yet forgotten
let render = () => {};  // the conversation list draws itself again
let sweepTimer = null;
let kept = false;  // the person here is gone (logged out elsewhere, or another logged in): nothing is forgotten

/* Whether conversation ``id`` waits in a trash, this tab's or another's: the list leaves it out. */
export const inTrash = (id) => held.has(id) || trashedElsewhere().has(id);

function keep() {
  keepTrash(Object.fromEntries([...held].map(([id, entry]) => [id, entry.moment])));
  $("trash").hidden = $("trash").childElementCount === 0;
}

/* Conversation ``session`` deleted: off the list, into the trash with Undo and "Forget now". */
export function putInTrash(session) {
  const id = session.id;
  const row = el("div", { class: "trash-row", "data-id": id },
    el("span", { text: `“${session.name}” deleted.` }),
    el("button", { class: "link-button", text: "Undo", "aria-label": `Undo deleting ${session.name}`,
                   onclick: () => takeOut(id) }),
    el("button", { class: "link-button danger-link", text: "Forget now", "aria-label": `Forget ${session.name} now`,
                   onclick: () => forgetNow(id) }));
  held.set(id, { session, row, moment: Date.now() + TRASH_S * 1000, forgetting: false,
                 timer: setTimeout(() => forgetNow(id), TRASH_S * 1000) });
  $("trash").append(row);
  keep();
  render();
}

/* Undo: conversation ``id`` is not deleted after all. Past its moment it is too late (another tab may have
 * forgotten it already), and it is forgotten now as it said; resolves to whether it was taken out. */
export function takeOut(id) {
  const entry = held.get(id);
  if (!entry || entry.forgetting) return false;
  if (Date.now() >= entry.moment) {
    forgetNow(id);
    return false;
  }
  clearTimeout(entry.timer);
  entry.row.remove();
  held.delete(id);
  keep();
  render();
  return true;
}

/* Forgets conversation ``id`` on the server: true once it is gone, forgotten already (by another tab) included. */
export async function forgetOnServer(id, keepalive = false) {
  try {
    await api(`/api/sessions/${id}`, { method: "DELETE", keepalive });
  } catch (e) {
    if (e.status !== 404) throw e;
  }
  return true;
}

/* Its moment came, or "Forget now": forgotten. The entry stays in the storage until the server has answered,
 * so that a page killed meanwhile leaves it for a later load. */
async function forgetNow(id) {
  const entry = held.get(id);
  if (!entry || entry.forgetting || kept) return;
  entry.forgetting = true;
  clearTimeout(entry.timer);
  entry.row.remove();
  $("trash").hidden = $("trash").childElementCount === 0;
  try {
    await forgetOnServer(id);
  } catch (e) {
    showError(`“${entry.session.name}” was not forgotten: ${e.message}`);
  }
  held.delete(id);
  keep();
  emit("sessions-changed");
}

/* What other tabs left that this one may forget now (tabs.js says which), forgotten; and a look again when the
 * next of theirs comes due. */
export async function sweepOtherTabs() {
  if (kept) return;
  const next = await sweep((id) => forgetOnServer(id).catch(() => false));
  clearTimeout(sweepTimer);
  if (next !== null) sweepTimer = setTimeout(() => emit("sessions-changed"), Math.max(0, next - Date.now()) + 50);
}

/* Forgets at once everything waiting in this tab's trash (before logging out: nobody else could later). */
export async function forgetTrashNow() {
  await Promise.all([...held.keys()].map(forgetNow));
}

/* The person of this tab is no longer the one logged in: what waits in the trash is not forgotten here (it would
 * be forgotten as whoever is logged in now); its record stays that person's, for their next visit to finish. */
export function keepTrashForLater() {
  kept = true;
  for (const entry of held.values()) clearTimeout(entry.timer);
}

/* ``draw``: the list draws itself again. Leaving the page forgets what waits here at once, as it said; the
 * entries stay written until a later load, or this page back from the back/forward cache, knows them gone. */
export function wireTrash(draw) {
  render = draw;
  window.addEventListener("pagehide", () => {
    if (kept) return;
    for (const [id, entry] of held) {
      clearTimeout(entry.timer);
      entry.row.remove();
      entry.forgetting = true;
      entry.moment = Math.min(entry.moment, Date.now());  // being forgotten now: no Undo any more
      forgetOnServer(id, true).catch(() => {});
    }
    keep();
  });
  window.addEventListener("pageshow", async (e) => {
    if (!e.persisted) return;
    for (const id of [...held.keys()]) {
      if (await forgetOnServer(id).catch(() => false)) held.delete(id);
    }
    keep();
    emit("sessions-changed");
  });
}

/* A derived memory (a summary, a digest, the arc, a fact) as the person meets it: readable through its
 * sources, correctable (edit) and deletable. A change is announced as "memory-changed". */
import { api } from "./api.js";
import { emit } from "./bus.js";
import { clamped, el, fragment, openLink } from "./dom.js";
import { showError } from "./feedback.js";

const D = window.LyraDates;

/* "Sources": the turns a memory was built from, each dated, with a link that opens it there. */
export function sourcesToggle(kind, id, label) {
  const list = el("ol", { class: "sources plain", hidden: true });
  const button = el("button", { class: "link", "aria-expanded": "false", text: "Sources",
    "aria-label": `Sources of ${label}`, onclick: async () => {
      const open = button.getAttribute("aria-expanded") !== "true";
      button.setAttribute("aria-expanded", String(open));
      list.hidden = !open;
      if (!open || list.childElementCount) return;
      try {
        const found = await api(`/api/sources/${kind}/${id}`);
        list.replaceChildren(fragment(found.turns.map((t) => el("li", {},
          el("time", { class: "badge date", datetime: t.created_at, text: `${D.dayLabel(t.created_at)} · ${t.session_name}` }),
          " ", openLink(t.session_id, t.id, "Open", `Open ${t.session_name} at this turn`),
          el("p", { text: t.content })))));
        if (!found.turns.length) list.append(el("li", { class: "muted", text: "Its sources were forgotten." }));
        if (found.total > found.turns.length) list.append(el("li", { class: "muted", text: `(${found.total} turns in all)` }));
      } catch (e) { showError(e.message); }
    } });
  return [button, list];
}

/* Fills ``container`` with one memory: its text (a few lines, "more" opens it), Sources, Edit, Delete. */
export function memoryItem(container, { kind, id, text, method, label, path, emptyText }) {
  // A refresh (a reply finished, another conversation opened) leaves alone what the person is editing.
  if (container.dataset.editing && container.dataset.editing === String(id)) return;
  delete container.dataset.editing;
  if (!text) { container.replaceChildren(el("p", { class: "muted", text: emptyText })); return; }
  const [body, more] = clamped(text);
  const mine = method === "user" ? el("span", { class: "badge", text: "your words" }) :
    method === "extractive" ? el("span", { class: "badge", text: "from the conversation",
      title: "Written without the model: the conversation's own sentences, edited" }) : null;
  const editButton = el("button", { class: "link", text: "Edit", "aria-label": `Edit ${label}`, onclick: () => {
    const area = el("textarea", { rows: "4", "aria-label": `${label}, your version` });
    area.value = text;
    const save = el("button", { text: "Save", onclick: async () => {
      try { await api(path, { method: "PUT", body: { content: area.value } }); }
      catch (e) { showError(e.message); return; }
      delete container.dataset.editing;
      emit("memory-changed");
    } });
    const cancel = el("button", { text: "Cancel", onclick: () => { delete container.dataset.editing; emit("memory-changed"); } });
    container.dataset.editing = String(id);
    container.replaceChildren(area, el("div", { class: "row" }, save, cancel));
    area.focus();
  } });
  const deleteButton = el("button", { class: "link", text: "Delete", "aria-label": `Delete ${label}`,
    onclick: async () => {
      if (!window.confirm(`Delete ${label}? It is not written again until what it was built from changes.`)) return;
      try { await api(path, { method: "DELETE" }); emit("memory-changed"); } catch (e) { showError(e.message); }
    } });
  const [toggle, list] = sourcesToggle(kind, id, label);
  container.replaceChildren(body, el("div", { class: "row" }, more, mine, toggle, editButton, deleteButton), list);
}

/* People (the owner's page): who is in the household, adding a person (a password, or a PIN for a child),
 * resetting a password and removing a person, with a question first that says what is forgotten. The owner
 * manages people, not their minds: this page shows counts, never another person's conversations or memories. */
import { api } from "./api.js";
import { $, el, fragment } from "./dom.js";
import { confirmForget } from "./feedback.js";
import { who } from "./login.js";
import { registerPanel } from "./panels.js";
import { count, fitSecret, SECRET_WORDS } from "./secret-field.js";

const D = window.LyraDates;

async function loadPeople() {
  try {
    const [me, { people }] = await Promise.all([api("/api/me"), api("/api/people")]);
    who.me = me;
    askOwnSecret(me.has_secret ? null : people.length > 1 ?
      "You have no password yet: set yours, so that you can log in now that others are here." :
      "Set your own password first: once a second person is here, everyone logs in, you too.");
    $("people-list").replaceChildren(fragment(people.map((p) => personItem(p, me))));
  } catch (e) { say(e.message, true); }
}

function say(message, failed = false) {
  $("people-status").textContent = message;
  $("people-status").classList.toggle("danger-link", failed);
}

function personItem(p, me) {
  const words = SECRET_WORDS[p.kind] || SECRET_WORDS.adult;
  const item = el("li", { class: "person", "data-person": p.id });
  const mine = p.id === me.id;
  const head = el("div", { class: "person-head" },
    el("strong", { text: p.name }),
    el("span", { class: "badge", text: p.owner ? "owner" : p.kind }),
    mine ? el("span", { class: "badge", text: "you" }) : null,
    p.has_secret ? null : el("span", { class: "badge warn-badge", text: `no ${words.name} yet` }),
    p.created_at ? el("span", { class: "muted small", text: `added ${D.dayLabel(p.created_at)}` }) : null);
  const reset = el("button", { class: "link", text: mine ? `Change your ${words.name}` : `Reset ${words.name}`,
    "aria-label": mine ? `Change your ${words.name}` : `Reset ${p.name}'s ${words.name}`,
    onclick: () => resetForm(item, p, mine) });
  const remove = mine ? null : el("button", { class: "link danger-link", text: "Remove",
    "aria-label": `Remove ${p.name}`, onclick: () => removePerson(p) });
  const rename = mine ? el("button", { class: "link", text: "Change your name", onclick: () => renameForm(item, p) })
    : null;
  item.append(head, el("div", { class: "row person-actions" }, reset, rename, remove));
  return item;
}

/* One's own name, in place: the name one logs in with and is called by. */
function renameForm(item, p) {
  if (item.querySelector("form")) return;
  const input = el("input", { "aria-label": "Your name", required: true, maxlength: "60", value: p.name });
  const form = el("form", { class: "row" }, input, el("button", { type: "submit", text: "Save" }),
    el("button", { type: "button", text: "Cancel", onclick: () => form.remove() }));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      await setOwnName(input.value);
      form.remove();
      say(`You are now called ${input.value.trim()}: log in with that name from now on.`);
      loadPeople();
    } catch (err) { say(err.message, true); }
  });
  item.append(form);
  input.focus();
}

async function setOwnName(name) {
  const { person } = await api("/api/me/name", { method: "PUT", body: { name } });
  if (who.me) who.me.name = person.name;
  $("person-name").textContent = person.name;
}

/* A new password (or PIN) for ``p``, in place: a reset ends that person's logins everywhere. */
function resetForm(item, p, mine) {
  if (item.querySelector("form")) return;
  const words = SECRET_WORDS[p.kind] || SECRET_WORDS.adult;
  const input = el("input", { "aria-label": mine ? `Your new ${words.name}` : `New ${words.name} for ${p.name}`,
                              required: true, placeholder: words.label });
  fitSecret(input, p.kind);
  // replacing one's own asks for it: a browser left logged in must not let someone else lock its person out
  const current = mine && p.has_secret ? el("input", { type: "password", required: true,
    "aria-label": `Your current ${words.name}`, placeholder: `current ${words.name}` }) : null;
  const form = el("form", { class: "row" }, current, input, el("button", { type: "submit", text: "Save" }),
    el("button", { type: "button", text: "Cancel", onclick: () => form.remove() }));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      if (mine) await setOwnSecret(input.value, current ? current.value : null);
      else await api(`/api/people/${p.id}/secret`, { method: "PUT", body: { secret: input.value } });
      form.remove();
      say(mine ? `Your ${words.name} was changed.` :
        `${p.name}'s ${words.name} was reset: they log in with the new one (their other logins ended).`);
      loadPeople();
    } catch (err) { say(err.message, true); }
  });
  item.append(form);
  (current || input).focus();
}

/* Sets one's own secret: the server logs this browser in with it (from now on everyone logs in, the owner too,
 * and this page stays theirs) and ends their logins elsewhere. */
async function setOwnSecret(secret, current = null) {
  await api("/api/me/secret", { method: "PUT", body: current ? { secret, current } : { secret } });
}

async function removePerson(p) {
  let r;
  try { r = await api(`/api/people/${p.id}/removal`); } catch (e) { say(e.message, true); return; }
  const text = `Removing ${p.name} forgets ${count(r.conversations, "conversation")}, ` +
    `${count(r.messages, "message")} and ${count(r.memories, "memory", "memories")}` +
    (r.tokens ? `, and revokes ${count(r.tokens, "API token")}` : "") + "; this cannot be undone." +
    (r.household_versions_after ? ` The household memory's versions they wrote go; ` +
      `${count(r.household_versions_after, "version")} others saved after theirs stay as saved, ` +
      "and may still hold words of theirs (edit the household memory to take them out)." : "");
  if (!await confirmForget(`Remove ${p.name}?`, text, `Remove ${p.name}`)) return;
  try {
    await api(`/api/people/${p.id}`, { method: "DELETE" });
    say(`${p.name} was removed, and everything of theirs forgotten.`);
    loadPeople();
  } catch (e) { say(e.message, true); }
}

/* The owner's own password, asked first (``why``; null: not asked). */
function askOwnSecret(why) {
  $("own-secret-form").hidden = !why;
  if (why && who.me && !$("own-name").value) $("own-name").value = who.me.name;  // "Owner" until they say
  $("own-secret-why").textContent = why || "";
}

async function addPerson(e) {
  e.preventDefault();
  const name = $("new-person-name").value.trim();
  const kind = $("new-person-kind").value;
  try {
    await api("/api/people", { method: "POST", body: { name, kind, secret: $("new-person-secret").value } });
  } catch (err) {
    if (err.type === "owner_needs_secret" || (err.status === 409 && !who.me?.has_secret)) {
      askOwnSecret(`Set your own password first: once ${name || "someone"} is here, everyone logs in, you too.`);
      $("own-secret").focus();
      say("");
    } else say(err.message, true);
    return;
  }
  $("person-form").reset();
  fitSecret($("new-person-secret"), "adult");
  $("new-person-secret-label").textContent = SECRET_WORDS.adult.label;
  say(`${name} was added: they log in with their name and ${SECRET_WORDS[kind].name}, and have a memory of their own.`);
  loadPeople();
}

registerPanel("people", { title: "People", open: loadPeople });

export function wirePeoplePanel() {
  fitSecret($("new-person-secret"), "adult");
  fitSecret($("own-secret"), "adult");
  $("new-person-kind").addEventListener("change", () => {
    const kind = $("new-person-kind").value;
    fitSecret($("new-person-secret"), kind);
    $("new-person-secret-label").textContent = SECRET_WORDS[kind].label;
  });
  $("person-form").addEventListener("submit", addPerson);
  $("own-secret-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      const name = $("own-name").value.trim();
      if (who.me && name && name !== who.me.name) await setOwnName(name);
      await setOwnSecret($("own-secret").value);
      $("own-secret-form").reset();
      askOwnSecret(null);
      say(`Your password is set${name ? `, ${name}` : ""}. You can add people now.`);
      loadPeople();
    } catch (err) { say(err.message, true); }
  });
}

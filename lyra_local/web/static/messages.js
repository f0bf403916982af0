/* The conversation's messages as the page shows them: a heading per day, bubbles with who wrote them and
 * when, their versions, how a reply that did not end by itself ended, and the tools under each. A tool that
 * changes the conversation (Regenerate, Edit, a version, Retry, Continue) is announced as a DOM event on its
 * message ("lyra-regenerate", "lyra-edit", "lyra-choose", "lyra-retry", "lyra-continue", with the turn's id):
 * chat.js acts on them. */
import { api } from "./api.js";
import { currentId, people } from "./conversation.js";
import { $, copyText, el, excerpt, fragment, openLink } from "./dom.js";

const D = window.LyraDates;
const cut = new Map();  // reply id -> why it ended early, until the server has it stored with the reply

export function renderMessages(messages) {
  const items = [];
  let day = null;
  for (const m of messages) {
    const item = messageItem(m.role, m.content, m.id, m);
    const key = D.dayKey(m.created_at);
    if (key && key !== day) item.prepend(daySeparator(m.created_at));
    day = key || day;
    items.push(item);
  }
  $("messages").replaceChildren(fragment(items));
  $("empty").hidden = messages.length > 0;
  scrollDown();
}

/* Appends a message written now, under a "Today" heading if the conversation's last day was another. */
export function appendMessage(item) {
  const list = $("messages");
  const now = new Date().toISOString();
  const last = [...list.querySelectorAll(".day-separator")].pop();
  if (!last || last.dataset.day !== D.dayKey(now)) item.prepend(daySeparator(now));
  list.append(item);
  $("empty").hidden = true;
}

/* A day's heading, at the top of its first message (the list holds messages only, one <li> each). */
function daySeparator(stamp) {
  return el("div", { class: "day-separator", role: "separator", "data-day": D.dayKey(stamp) },
            el("time", { datetime: stamp, text: D.dayHeading(stamp), title: D.dayLabel(stamp) }));
}

const CUT_NOTES = { stopped: "Stopped before the end.", failed: "Cut short by an error.",
                    broke: "Cut short: the connection to the server broke.", length: "Cut at the length limit." };
// A reply's stored ``ending`` (records.ENDINGS) -> its note; Continue is offered under each.
const ENDINGS = { length: "length", stopped: "stopped", error: "failed" };

/* Remembers that stored reply ``id`` ended early, so every later rendering marks it. */
export function rememberCut(id, why) {
  cut.set(Number(id), why);
}

/* Marks a reply that ended early, so the person knows it is not whole: "length", "stopped", "failed" or
 * "broke"; a stored one (``continuable``) gets Continue among its tools, which asks for the rest of it. */
export function markCut(item, why, continuable = false) {
  if (item.dataset.id && !continuable) rememberCut(item.dataset.id, why);
  item.classList.add("cut");
  item.querySelector(".cut-note")?.remove();
  item.querySelector(".continue-button")?.remove();
  item.querySelector(".bubble").after(el("p", { class: "cut-note", role: "note", text: CUT_NOTES[why] || CUT_NOTES.failed }));
  const tools = item.querySelector(".message-tools");
  if (continuable && tools && item.dataset.id) {
    tools.prepend(el("button", { class: "link-button continue-button", text: "Continue",
                                 "aria-label": "Continue this reply", onclick: ask(item, "continue", Number(item.dataset.id)) }));
  }
}

/* Marks the person's message that did not reach the server: kept on the page, with Retry. */
export function markUnsent(item, reason) {
  item.classList.add("unsent");
  item.querySelector(".message-tools")?.remove();
  item.append(el("div", { class: "message-tools" },
    el("span", { class: "unsent-note", role: "note", text: `Not sent: ${reason}` }),
    el("button", { class: "link-button", text: "Retry", "aria-label": "Retry sending this message",
                   onclick: () => item.dispatchEvent(new CustomEvent("lyra-retry", { bubbles: true })) })));
}

/* The conversation on screen as stored; dropped if another was opened while it loaded. */
export async function reloadMessages() {
  const id = currentId();
  if (!id) return;
  const { messages } = await api(`/api/sessions/${id}/messages`);
  if (currentId() === id) renderMessages(messages);
}

/* A message: who said it and when (shown on hover), its text, and for a stored one the tools under it. */
export function messageItem(role, content, id, meta = {}) {
  const body = el("div", { class: "bubble" });
  // An imported reply is its source's ("ChatGPT"), never the companion's: the server says whose it is.
  const who = role === "assistant" ? meta.imported_from || people.companion : people.user;
  const stamp = meta.created_at || (id ? null : new Date().toISOString());
  const item = el("li", { class: `message ${role}`, "data-id": id ?? "" },
                  el("div", { class: "meta" }, el("span", { class: "who", text: who }),
                     stamp ? el("time", { class: "when", datetime: stamp, text: D.timeLabel(stamp),
                                          title: D.momentLabel(stamp) }) : null),
                  body);
  item.content = content;  // as stored (an edit starts from it)
  setContent(item, content);
  if (meta.caption) {  // what a photo shows: nobody's words, so apart from the bubble, and no empty bubble for it
    body.hidden = !content;
    body.before(photoCaption([{ text: meta.caption, match: false }]));
  }
  if (id) item.append(messageTools(item, role, id, meta));
  if (id && meta.ending) markCut(item, ENDINGS[meta.ending] || "failed", !meta.imported_from);
  else if (id && cut.has(id)) markCut(item, cut.get(id));
  return item;
}

/* A photo's caption ("A photo: a dog on a beach"), in pieces that did or did not match a search. */
export function photoCaption(pieces) {
  return el("p", { class: "photo-caption", title: "What the photo shows (its caption, not anyone's words)" },
            "A photo: ", fragment(pieces.map((p) => (p.match ? el("mark", { text: p.text }) : p.text))));
}

export function setContent(item, text) {
  const body = item.querySelector(".bubble");
  if (item.classList.contains("assistant")) body.replaceChildren(window.LyraMarkdown.render(text));
  else {  // a line each, in a loop: a message may hold 200,000 newlines
    const lines = document.createDocumentFragment();
    text.split("\n").forEach((line, i) => {
      if (i) lines.append(document.createElement("br"));
      lines.append(line);
    });
    body.replaceChildren(lines);
  }
}

export function scrollDown() {
  const list = $("messages");
  list.scrollTop = list.scrollHeight;
}

const ask = (item, what, id) => () => item.dispatchEvent(new CustomEvent(`lyra-${what}`, { bubbles: true, detail: { id } }));

/* Under a message: its versions (‹ 2/3 ›); Copy; Regenerate (a reply of this companion's, not an imported
 * one) or Edit (the person's message); Why? */
function messageTools(item, role, id, meta) {
  const tools = el("div", { class: "message-tools" });
  const ids = meta.versions || [id];
  if (ids.length > 1) {
    const at = ids.indexOf(id);
    const what = role === "assistant" ? "reply" : "version of this message";
    const go = (to) => ask(item, "choose", ids[to]);
    tools.append(el("span", { class: "pager", role: "group", "aria-label": `Versions of this ${role === "assistant" ? "reply" : "message"}` },
      el("button", { class: "icon-button", "aria-label": `Previous ${what}`, text: "‹", disabled: at <= 0, onclick: go(at - 1) }),
      el("span", { class: "pager-count", text: `${at + 1}/${ids.length}`, "aria-label": `${at + 1} of ${ids.length}` }),
      el("button", { class: "icon-button", "aria-label": `Next ${what}`, text: "›", disabled: at >= ids.length - 1, onclick: go(at + 1) })));
  }
  tools.append(copyButton(item));
  const imported = Boolean(meta.source_id);
  if (role === "assistant") {
    if (!imported) {
      tools.append(el("button", { class: "link-button", text: "Regenerate", "aria-label": "Regenerate this reply",
                                  onclick: ask(item, "regenerate", id) }));
    }
    tools.append(whyToggle(id));
  } else {
    tools.append(el("button", { class: "link-button", text: "Edit", "aria-label": "Edit this message",
                                onclick: ask(item, "edit", id) }));
  }
  return tools;
}

/* Copy: the message as written (Markdown for a reply), so it pastes as it was said. */
function copyButton(item) {
  const button = el("button", { class: "link-button", text: "Copy", "aria-label": "Copy this message", onclick: async () => {
    try {
      await copyText(item.content);
      button.textContent = "Copied";
    } catch (e) { button.textContent = "Copy failed"; }
    setTimeout(() => { button.textContent = "Copy"; }, 1500);
  } });
  return button;
}

/* Why? under a reply: the context it had and the memories it used, each with how it was found, the days it
 * speaks of and its conversation; for an imported reply, who wrote it and when (it had no context here). */
function whyToggle(id) {
  const box = el("div", { class: "why", hidden: true, id: `why-${id}` });
  const button = el("button", { class: "link-button", "aria-expanded": "false", "aria-controls": `why-${id}`,
                                text: "Why?" });
  button.addEventListener("click", async () => {
    const open = button.getAttribute("aria-expanded") !== "true";
    button.setAttribute("aria-expanded", String(open));
    box.hidden = !open;
    if (open && !box.childElementCount) {
      try {
        const trace = await api(`/api/exchanges/${id}/trace`);
        if (trace.kind === "imported") box.append(importedWhy(trace));
        else box.append(...contextWhy(trace));
      } catch (e) { box.append(el("p", { class: "muted", text: e.message })); }
    }
    if (open) box.scrollIntoView({ block: "nearest" });
  });
  return el("div", { class: "why-wrap" }, button, box);
}

function importedWhy(trace) {
  return el("p", { class: "why-imported", text: `Imported from ${trace.imported_from}: written there on `
    + `${D.dayLabel(trace.written_at)}. It had no ${people.companion} context — none of ${people.companion}'s `
    + "memories went into it." });
}

function contextWhy(trace) {
  const memories = trace.memories.filter((m) => m.layer !== "recent");
  return [el("p", { class: "muted", text: `${trace.context_tokens} tokens of context; ` +
            (memories.length ? "memories it used:" : "no memories beyond this conversation.") }),
          el("ul", { class: "plain" }, fragment(memories.map(whyItem)))];
}

/* "a", "a and b", "a, b and c". */
const listed = (words) => (words.length < 2 ? words.join("") : `${words.slice(0, -1).join(", ")} and ${words.at(-1)}`);

/* One memory of a trace: what it is and how it was found, in words; the days it speaks of; its text. */
function whyItem(m) {
  const found = m.found_by && m.found_by.length ? `found ${listed(m.found_by)}` : "";
  return el("li", {},
    el("span", { class: "badge", text: m.layer_words || m.layer }),
    found ? el("span", { class: "muted why-found", text: ` ${found} ` }) : null,
    memoryDate(m),
    el("span", m.forgotten ? { class: "muted", text: " (forgotten)" } : m.set_aside
      ? { class: "muted", text: " (a version not chosen now)" } : { class: "why-text", text: " " + excerpt(whyText(m), 300) }),
    !m.forgotten && !m.set_aside && m.session_id
      ? el("span", { class: "why-open" }, " · ", openLink(m.session_id, m.kind === "exchange" ? m.id : undefined,
                                                          "Open", `Open ${m.session_name || "the conversation"} at this memory`))
      : null);
}

/* A memory's words, and what its photo shows bracketed as a photo (as the companion read it). */
const whyText = (m) => [m.content, m.caption ? `[a photo: ${m.caption}]` : ""].filter(Boolean).join(" ");

/* The days a memory speaks of, as Search shows them: a digest's period, a summary's first to last turn, a
 * turn's day; with its conversation. */
function memoryDate(m) {
  if (!m.created_at) return null;
  const days = m.kind === "digest" ? D.periodLabel(m.created_at)
    : D.spanLabel(m.began_at || m.created_at, m.ended_at || m.began_at || m.created_at);
  const datetime = m.kind === "digest" ? D.periodStart(m.created_at) : m.began_at || m.created_at;
  return el("time", { class: "badge date", datetime, text: [days, m.session_name].filter(Boolean).join(" · ") });
}

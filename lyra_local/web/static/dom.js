/* Building the page: every string from the server goes in as text (textContent), never as HTML. */

export const $ = (id) => document.getElementById(id);

/* An element with properties (class, text, on<event> listeners, attributes) and children. */
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null && v !== false) node.setAttribute(k, v === true ? "" : v);
  }
  node.append(fragment(children));
  return node;
}

/* Nodes (or strings; null and undefined left out) as one fragment, appended one by one: spreading a list
 * from the server into one call (`replaceChildren(...list)`) overflows the stack at about 100,000 items. */
export function fragment(nodes) {
  const out = document.createDocumentFragment();
  for (const node of nodes) if (node !== null && node !== undefined) out.append(node);
  return out;
}

// Graphemes (an emoji, a flag, a letter with its accents) where the browser can tell them, else code points.
const GRAPHEMES = typeof Intl === "object" && Intl.Segmenter ? new Intl.Segmenter(undefined, { granularity: "grapheme" }) : null;

/* The start of a person's ``text``: at most ``count`` characters as a person sees them and ``units`` UTF-16
 * code units, never half of one. ``slice`` cuts by code units, so a cut could end in half of an emoji's
 * surrogate pair: a conversation named so was refused by the server, and its first message lost. */
export function clip(text, count, units = Infinity) {
  let out = "";
  let n = 0;
  for (const piece of GRAPHEMES ? GRAPHEMES.segment(text) : text) {  // a string iterates by code point
    const next = GRAPHEMES ? piece.segment : piece;
    if (n++ === count || out.length + next.length > units) break;
    out += next;
  }
  return out;
}

/* The start of a text to show, cut at a word and marked as cut ("… "): a reader never sees half a word. */
export function excerpt(text, count) {
  const start = clip(text, count);
  if (start.length === text.length) return text;
  const atWord = start.replace(/\s+\S*$/u, "");
  return `${(atWord || start).trimEnd()}…`;
}

const CLAMP_CHARS = 140;  // about three lines of the panel: a longer text shows them, and "more" opens it whole

/* A text as a paragraph of a few lines, and the "more" button that opens it (null for a short text). */
export function clamped(text) {
  const body = el("p", { class: text.length > CLAMP_CHARS ? "clamp" : null, text });
  if (text.length <= CLAMP_CHARS) return [body, null];
  const more = el("button", { class: "link more", "aria-expanded": "false", text: "more", onclick: () => {
    const open = more.getAttribute("aria-expanded") !== "true";
    more.setAttribute("aria-expanded", String(open));
    more.textContent = open ? "less" : "more";
    body.classList.toggle("clamp", !open);
  } });
  return [body, more];
}

/* A real link that opens a conversation at a turn (#session=3&turn=55): a new tab works too. */
export function openLink(sessionId, turnId, text, label) {
  const where = new URLSearchParams({ session: String(sessionId) });
  if (turnId) where.set("turn", String(turnId));
  return el("a", { class: "open-link", href: `#${where}`, text, "aria-label": label });
}

/* Copies ``text`` (markdown.js holds the one clipboard path: plain http on a home network has no clipboard API). */
export const copyText = (text) => window.LyraMarkdown.copyText(text);

/* Show ``text`` in an editor that refreshes reload (the core memory, the household memory), unless the person
 * changed what it showed last: a dream ending, a turn or another tab's save must not wipe what they are typing,
 * focused or not. ``saved(input, text)`` after a save of ``text``: that is what the server has now. */
export function refreshEditor(input, text) {
  if (input.value === (input.dataset.shown ?? "")) input.value = text;
  input.dataset.shown = text;
}

export function saved(input, text) {
  input.dataset.shown = text;
}

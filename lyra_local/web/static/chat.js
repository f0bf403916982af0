/* Talking: the composer, a reply streamed token by token, Stop, Regenerate, Edit, Continue (the rest of a cut
 * reply) and a turn's versions. */
import { api, sse } from "./api.js";
import { emit, on } from "./bus.js";
import { currentId, currentRemembered, endReply, pendingOpen, replying, setCurrent, startReply,
         stopReply } from "./conversation.js";
import { $, clip, el } from "./dom.js";
import { showError, showNotice } from "./feedback.js";
import { appendMessage, markCut, markUnsent, messageItem, rememberCut, reloadMessages, renderMessages, scrollDown,
         setContent } from "./messages.js";
import { conversationGone, newSession } from "./sessions.js";

/* Sends the person's message. A message the server never stored stays on the page marked "Not sent",
 * with Retry, and its text goes back into the message box: what was typed is never lost. A conversation
 * this send created is not kept when its first message was refused. A conversation deleted meanwhile (in
 * another tab, by another client) is closed: Retry sends the message in a new one, off the record if it was. */
async function send(text) {
  if (!text.trim() || replying()) return;
  showError("");
  showNotice("");
  for (const old of $("messages").querySelectorAll(".message.unsent")) if (old.content === text) old.remove();
  if (pendingOpen()) await pendingOpen().catch(() => {});
  const userItem = messageItem("user", text);
  let sessionId = currentId();
  const creating = !sessionId;
  try {
    // the server takes 200 characters of a name at most
    if (creating) sessionId = (await newSession(clip(text.trim(), 48, 200), currentRemembered())).id;
  } catch (e) {
    appendMessage(userItem);
    return notSent(userItem, e);
  }
  appendMessage(userItem);
  const outcome = await streamReply(sessionId, `/api/sessions/${sessionId}/chat`, { message: text }, userItem);
  if (outcome.stored) return;
  if (!creating && outcome.error?.status === 404) {
    notSent(userItem, new Error("this conversation was deleted meanwhile (in another tab?); Retry sends it in "
                                + "a new one"));
    return conversationGone(sessionId);
  }
  notSent(userItem, outcome.error);
  if (creating && outcome.error && outcome.error.name !== "TypeError") {  // the server answered: drop the empty one
    api(`/api/sessions/${sessionId}`, { method: "DELETE" }).then(() => emit("sessions-changed"), () => {});
    if (currentId() === sessionId) setCurrent(null, currentRemembered());  // still off the record if it was
  }
}

function notSent(item, error) {
  const reason = !error ? "stopped before it reached the server" : error.name === "TypeError"
    ? "the server did not answer (is it running?)" : error.message;
  markUnsent(item, reason);
  const input = $("composer-input");
  if (!input.value.trim()) { input.value = item.content; input.dispatchEvent(new Event("input")); }
  scrollDown();
}

/* Streams a reply (a turn, a regenerated reply, the reply to an edited message) of conversation
 * ``sessionId`` under ``userItem``, then shows the conversation as the server has it (with each turn's
 * versions). A reply that ends early is marked: stopped (Stop, Esc), cut by an error, or by a connection
 * that broke. ``replacing``: the reply a regeneration takes the place of (it stays last until the new one
 * is stored). ``continuing``: the item of a cut reply whose rest streams: it grows in place. Resolves to whether
 * the server stored the person's turn, and why not. Nothing is re-rendered over a turn the server did not
 * store: the caller says so on it. */
async function streamReply(sessionId, path, body, userItem, replacing = null, continuing = null) {
  const reply = messageItem("assistant", continuing ? continuing.content : "");
  reply.classList.add("streaming");
  if (continuing) continuing.replaceWith(reply);
  else $("messages").append(reply);
  $("empty").hidden = true;
  scrollDown();
  const controller = startReply();
  showStreaming(true);
  let textSoFar = continuing ? continuing.content : "";
  let pending = false;
  let stored = false;
  let failure = null;  // the server's error event
  let replyId = null;
  let broke = null;
  try {
    await sse(path, { method: "POST", body: body ? JSON.stringify(body) : undefined,
                      signal: controller.signal }, (event, data) => {
      if (event === "stored") {
        stored = true;
        if (userItem) userItem.dataset.id = data.exchange_id;
      } else if (event === "delta") {
        textSoFar += data.text;
        if (!pending) {  // re-render at most every 40 ms however fast tokens come
          pending = true;
          setTimeout(() => { pending = false; setContent(reply, textSoFar); scrollDown(); }, 40);
        }
      } else if (event === "notice") showNotice(data.text);
      else if (event === "error") {
        failure = data.text || "the model failed";
        if (stored) showError(failure);
      } else if (event === "done") replyId = data.exchange_id;
    });
  } catch (e) {
    if (e.name !== "AbortError") broke = e;
  } finally {
    endReply(controller);
    showStreaming(false);
    reply.classList.remove("streaming");
    setContent(reply, textSoFar);
    if (!textSoFar) reply.remove();
  }
  emit("turn-finished", sessionId);
  if (!stored) return { stored, error: broke || (failure ? new Error(failure) : null) };
  if (failure && replyId) rememberCut(replyId, "failed");
  if (controller.signal.aborted || broke) {
    // A reply cut off here is stored when the server sees the hang-up, at its next token: until then the
    // page keeps what it showed, marked, and then shows the conversation as stored.
    const why = broke ? "broke" : "stopped";
    if (textSoFar) markCut(reply, why);
    if (broke) showError("The connection to the server broke while the reply came in; what arrived is kept.");
    settleAfterStop(sessionId, Boolean(textSoFar), why, replacing);
  } else if (currentId() === sessionId) {
    await reloadMessages().catch(() => {});
  }
  if (!textSoFar) $("composer-input").focus();
  return { stored, error: null };
}

/* After a reply was cut off: the conversation as stored, once the server has written the reply (or gave up);
 * a regeneration's reply is the stored one only once it is not the reply it replaces. */
async function settleAfterStop(sessionId, replied, why, replacing, tries = 10) {
  await new Promise((resolve) => setTimeout(resolve, 500));
  if (currentId() !== sessionId || replying()) return;
  try {
    const { messages } = await api(`/api/sessions/${sessionId}/messages`);
    const last = messages[messages.length - 1];
    const stored = last && last.role === "assistant" && last.id !== replacing;
    if (currentId() !== sessionId || replying()) return;
    if (stored && replied) rememberCut(last.id, why);
    if (stored || !replied || tries <= 1) renderMessages(messages);
    else settleAfterStop(sessionId, replied, why, replacing, tries - 1);
  } catch (e) {
    if (tries > 1) settleAfterStop(sessionId, replied, why, replacing, tries - 1);  // the server may be back soon
    else showError(e.message);
  }
}

function showStreaming(on) {
  $("send").hidden = on;
  $("stop").hidden = !on;
  $("composer-input").setAttribute("aria-busy", String(on));
}

async function chooseVersion(turnId) {
  if (replying()) return;
  try {
    const { session_id, messages } = await api(`/api/exchanges/${turnId}/choose`, { method: "POST" });
    if (currentId() === session_id) renderMessages(messages);
    const kept = document.querySelector(`#messages li[data-id="${Number(turnId)}"] .pager button:not([disabled])`);
    if (kept) kept.focus();
    emit("memory-changed");
  } catch (e) { showError(e.message); }
}

function startEdit(item, id) {
  if (replying()) return;
  const old = item.content;
  const area = el("textarea", { rows: "3", "aria-label": "Your message, edited" });
  area.value = old;
  const save = el("button", { class: "primary", text: "Send", onclick: () => {
    if (!area.value.trim() || area.value === old) { reloadMessages(); return; }
    editMessage(item, id, area.value);
  } });
  const cancel = el("button", { text: "Cancel", onclick: () => reloadMessages() });
  area.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); save.click(); }
    if (e.key === "Escape") { e.preventDefault(); cancel.click(); }
  });
  item.querySelector(".message-tools").replaceChildren(el("div", { class: "edit-box" }, area,
    el("div", { class: "row end" }, cancel, save)));
  item.querySelector(".bubble").hidden = true;
  area.focus();
}

/* An edited message: what followed it leaves the page (it is kept as a branch) and a new reply streams. */
async function editMessage(item, id, text) {
  if (replying()) return;
  while (item.nextElementSibling) item.nextElementSibling.remove();
  const userItem = messageItem("user", text);
  item.replaceWith(userItem);
  const outcome = await streamReply(currentId(), `/api/exchanges/${id}/edit`, { content: text }, userItem);
  if (!outcome.stored) await settleRefused(outcome);
}

async function regenerate(item, id) {
  if (replying()) return;
  while (item.nextElementSibling) item.nextElementSibling.remove();
  const userItem = item.previousElementSibling;
  item.remove();
  const outcome = await streamReply(currentId(), `/api/exchanges/${id}/regenerate`, null, userItem, id);
  if (!outcome.stored) await settleRefused(outcome);
}

/* Continue: the rest of a reply that was cut short, streamed onto it; what followed it leaves the page (it is
 * kept as a branch, as for Regenerate). */
async function continueReply(item, id) {
  if (replying()) return;
  while (item.nextElementSibling) item.nextElementSibling.remove();
  const outcome = await streamReply(currentId(), `/api/exchanges/${id}/continue`, null, item.previousElementSibling,
                                    id, item);
  if (!outcome.stored) await settleRefused(outcome);
}

/* An edit or a regeneration the server refused: it says why, and the conversation is shown as it still is. */
async function settleRefused(outcome) {
  if (outcome.error) showError(outcome.error.name === "TypeError" ? "The server did not answer; nothing changed."
                                                                  : outcome.error.message);
  await reloadMessages().catch(() => {});
}

/* Wires the composer, Stop and the tools under the messages. */
export function wireChat() {
  const input = $("composer-input");
  const autosize = () => { input.style.height = "auto"; input.style.height = `${Math.min(input.scrollHeight, 220)}px`; };
  input.addEventListener("input", autosize);
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); $("composer").requestSubmit(); }
  });
  $("composer").addEventListener("submit", (e) => {
    e.preventDefault();
    const text = input.value;
    if (!text.trim() || replying()) return;
    input.value = "";
    autosize();
    send(text);
  });
  $("stop").addEventListener("click", stopReply);
  document.addEventListener("keydown", (e) => {  // Esc stops a reply, unless it closes a dialog or a field
    if (e.key === "Escape" && replying() && !e.defaultPrevented && !document.querySelector("dialog[open]")) {
      e.preventDefault();  // a field's own Esc (a rename, an edit) ran first and prevented this
      stopReply();
    }
  });
  const messages = $("messages");
  messages.addEventListener("lyra-regenerate", (e) => regenerate(e.target, e.detail.id));
  messages.addEventListener("lyra-edit", (e) => startEdit(e.target, e.detail.id));
  messages.addEventListener("lyra-choose", (e) => chooseVersion(e.detail.id));
  messages.addEventListener("lyra-continue", (e) => continueReply(e.target, e.detail.id));
  messages.addEventListener("lyra-retry", (e) => {
    const text = e.target.content;
    if (replying()) return;
    if (input.value === text) { input.value = ""; autosize(); }
    e.target.remove();
    send(text);
  });
  on("conversation-changed", (id) => { if (id === currentId()) reloadMessages().catch((e) => showError(e.message)); });
}

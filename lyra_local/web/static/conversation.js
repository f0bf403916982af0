/* The conversation on screen and the reply streaming into it: the one piece of state the chat and the
 * conversation list both need. Everything else that changes is told through bus.js. */
import { emit } from "./bus.js";
import { holdOpen } from "./tabs.js";

export const people = { user: "You", companion: "Lyra" };  // as the server's settings name them

let nameThem = () => {};
/* Resolves once the page knows who "you" and the companion are (main.js, after who is logged in): a conversation
 * opened before that (the address changed while the page started) would be drawn under the wrong names. */
export const namesKnown = new Promise((resolve) => { nameThem = resolve; });

export function namesAreKnown() {
  nameThem();
}

let openId = null;
let remembered = true;  // false while an off-the-record conversation is open
let reply = null;  // the AbortController of the reply streaming now
let opening = null;  // a new conversation being created: a message sent meanwhile waits for it

export const currentId = () => openId;
export const currentRemembered = () => remembered;

/* Opens conversation ``id`` (null: none); ``remember`` false for an off-the-record one (with none open: the
 * next message starts an off-the-record one). Another tab does not delete an off-the-record one open here. */
export function setCurrent(id, remember = true) {
  openId = id;
  remembered = remember;
  holdOpen(id !== null && !remember ? id : null);
  emit("conversation-opened", id);
}

export const replying = () => reply !== null;

export function startReply() {
  reply = new AbortController();
  return reply;
}

export function endReply(controller) {
  if (reply === controller) reply = null;
}

/* Stops the reply streaming now, if any (Stop, Esc, leaving an off-the-record conversation). */
export function stopReply() {
  if (reply) reply.abort();
}

/* Stops the reply and waits (5 s at most) until its stream has ended, so nothing of it is written after. */
export async function stopReplyAndWait() {
  stopReply();
  for (let i = 0; i < 100 && reply; i++) await new Promise((resolve) => setTimeout(resolve, 50));
}

export const pendingOpen = () => opening;

/* Remembers ``promise`` (a conversation being created) until it settles. */
export function trackOpening(promise) {
  opening = promise;
  const done = () => { if (opening === promise) opening = null; };
  promise.then(done, done);
  return promise;
}

/* How the chat, the conversation list and the panels tell each other what changed, instead of sharing state.
 *
 *   conversation-opened  (id or null)  another conversation is on screen
 *   turn-finished        (session id)  a reply ended (stored, stopped or failed): lists and memory refresh
 *   conversation-changed (session id)  its turns changed elsewhere (a search forgot one): the chat re-reads it
 *   sessions-changed     ()            conversations were added or removed (an import): the list re-reads them
 *   memory-changed       ()            a memory was edited or chosen: the memory panel refreshes if open
 */

const bus = new EventTarget();

export function on(name, handler) {
  bus.addEventListener(name, (e) => handler(e.detail));
}

export function emit(name, detail = null) {
  bus.dispatchEvent(new CustomEvent(name, { detail }));
}

/* The person in the header: their name, and a menu with People (the owner's), their API tokens, Switch person,
 * Log out and Log out everywhere. Hidden while nobody logs in (one person on this machine's own address): then
 * the page looks as it always did, and Settings → People and tokens leads to both pages. */
import { $ } from "./dom.js";
import { logOut, who } from "./login.js";
import { togglePanel, isShown } from "./panels.js";

const open = (name) => () => {
  $("person-menu").open = false;
  if (!isShown(name)) togglePanel(name);
};

export function wirePersonBar() {
  $("open-people").addEventListener("click", open("people"));
  $("open-tokens").addEventListener("click", open("tokens"));
  $("settings-people").addEventListener("click", open("people"));
  $("settings-tokens").addEventListener("click", open("tokens"));
  $("switch-person").addEventListener("click", () => logOut());
  $("log-out").addEventListener("click", () => logOut());
  $("log-out-everywhere").addEventListener("click", () => logOut({ everywhere: true }));
  // a click elsewhere closes the menu, as a menu does
  document.addEventListener("click", (e) => {
    if ($("person-menu").open && !$("person-menu").contains(e.target)) $("person-menu").open = false;
  });
}

/* Shows who is logged in (once the server said so: who.me). */
export function showPerson() {
  const me = who.me;
  if (!me) return;
  $("person-menu").hidden = Boolean(me.login_free);
  $("person-name").textContent = me.name;
  $("person-kind").textContent = me.owner ? "owner" : me.kind === "child" ? "child" : "";
  $("person-kind").hidden = !$("person-kind").textContent;
  $("open-people").hidden = !me.owner;
  $("settings-people").hidden = !me.owner;
  document.body.classList.toggle("member", !me.owner);  // app.css hides [data-owner-only]
}

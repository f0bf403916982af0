/* Lyra's web UI, started: plain ES modules, no build step. Every string from the server goes into the page
 * as text (textContent) or through LyraMarkdown (markdown.js), never as HTML. */
import { api } from "./api.js";
import { wireChat } from "./chat.js";
import { namesAreKnown, people } from "./conversation.js";
import { $ } from "./dom.js";
import { wireDreamPanel } from "./dream-panel.js";
import { showError } from "./feedback.js";
import { firstRun } from "./first-run.js";
import { knowWho, who } from "./login.js";
import { wireMemoryPanel } from "./memory-panel.js";
import { wirePanels } from "./panels.js";
import { wirePeoplePanel } from "./people-panel.js";
import { showPerson, wirePersonBar } from "./person-bar.js";
import { loadKinds, wireSearchPanel } from "./search-panel.js";
import { loadSessions, openFirst, wireSessions } from "./sessions.js";
import { wireSettingsPanel } from "./settings-panel.js";
import { wireTokensPanel } from "./tokens-panel.js";
import { wireYourData } from "./your-data.js";

async function start() {
  wireChat();
  wireSessions();
  wirePanels();
  wireMemoryPanel();
  wireSearchPanel();
  wireDreamPanel();
  wireSettingsPanel();
  wireYourData();
  wirePersonBar();
  wirePeoplePanel();
  wireTokensPanel();
  try {
    if (!await knowWho()) return;  // the login page is shown; logging in reloads the page
    showPerson();
    const settings = await api("/api/settings");
    people.companion = settings.companion.name;
    // in a household the person logged in is "you"; alone, the name the settings give
    people.user = (who.me && !who.me.login_free && who.me.name) || settings.companion.user_name || "You";
    namesAreKnown();
    $("companion-name").textContent = people.companion;
    document.title = people.companion;
    firstRun(settings.demo_chat_model);
    await Promise.all([loadKinds(), loadSessions()]);
    await openFirst();
  } catch (e) { showError(e.message); }
}

start();

// The box office's live console for staff: sign in (development: a name and a role;
// production: the admin token in the address fragment), then the events, or the live
// view of the one the address names (`?event=<id>`, else the configured event;
// `?events` lists them all). A token the services refuse ends the session
// (session.ts): the view stops and the sign-in comes back, saying why.

import "../style.css";
import "./console.css";
import { eventId, loadConfig, type PageConfig } from "../config.js";
import { h, show } from "../dom.js";
import { staffClients } from "./clients.js";
import { showEvent } from "./event-view.js";
import { showEvents } from "./events.js";
import { StaffSession, type Ended } from "./session.js";
import { roleLabel, signInStaff, signOut, type Staff } from "./staff.js";

function fatal(e: unknown): void {
  const text = e instanceof Error ? e.message : String(e);
  const again = h("button", { type: "button" }, "Start again");
  again.addEventListener("click", () => window.location.reload());
  show("Something went wrong", h("h2", {}, "Something went wrong"), h("p", { role: "alert" }, text), again);
}

/** The header's "Signed in as …" and its Sign out button; empty and hidden when no one is. */
function showWho(staff: Staff | null): void {
  const who = document.getElementById("who")!;
  const out = document.getElementById("sign-out");
  if (out instanceof HTMLButtonElement) out.hidden = staff === null;
  if (!staff) {
    who.replaceChildren();
    return;
  }
  const roles = staff.roles.length > 0 ? staff.roles.map(roleLabel).join(", ") : "no staff role";
  who.replaceChildren(
    "Signed in as ",
    h("strong", { id: "staff-who" }, staff.name || "unknown"),
    " · ",
    h("span", { id: "staff-roles", "data-roles": staff.roles.join(" ") }, roles),
  );
}

/** Signs in (saying why, after a refused session) and shows the events or the event. */
async function start(config: PageConfig, ended?: Ended): Promise<void> {
  const staff = await signInStaff(config, ended);
  showWho(staff);
  const session = new StaffSession(staff, (why) => {
    signOut();
    showWho(null);
    start(config, why).catch(fatal);
  });
  const api = staffClients(config, staff.token, session.interceptor);
  const event = new URLSearchParams(window.location.search).has("events") ? null : eventId(config);
  if (event) await showEvent(api, event, session.signal);
  else await showEvents(api);
}

async function run(): Promise<void> {
  const out = document.getElementById("sign-out");
  out?.addEventListener("click", () => {
    signOut();
    window.location.reload();
  });
  await start(await loadConfig());
}

run().catch(fatal);

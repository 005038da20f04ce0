// The box office's live console for staff: sign in (development: a name and a role;
// production: the admin token in the address fragment), then the events, or the live
// view of the one the address names (`?event=<id>`, else the configured event;
// `?events` lists them all).

import "../style.css";
import "./console.css";
import { eventId, loadConfig } from "../config.js";
import { h, show } from "../dom.js";
import { staffClients } from "./clients.js";
import { showEvent } from "./event-view.js";
import { showEvents } from "./events.js";
import { roleLabel, signInStaff, signOut } from "./staff.js";

function fatal(text: string): void {
  const again = h("button", { type: "button" }, "Start again");
  again.addEventListener("click", () => window.location.reload());
  show("Something went wrong", h("h2", {}, "Something went wrong"), h("p", { role: "alert" }, text), again);
}

async function run(): Promise<void> {
  const config = await loadConfig();
  const staff = await signInStaff(config);
  const roles = staff.roles.length > 0 ? staff.roles.map(roleLabel).join(", ") : "no staff role";
  const who = document.getElementById("who")!;
  who.replaceChildren(
    "Signed in as ",
    h("strong", { id: "staff-who" }, staff.name || "unknown"),
    " · ",
    h("span", { id: "staff-roles", "data-roles": staff.roles.join(" ") }, roles),
  );
  const out = document.getElementById("sign-out");
  if (out instanceof HTMLButtonElement) {
    out.hidden = false;
    out.addEventListener("click", () => {
      signOut();
      window.location.reload();
    });
  }
  const api = staffClients(config, staff.token);
  const event = new URLSearchParams(window.location.search).has("events") ? null : eventId(config);
  if (event) await showEvent(api, event);
  else await showEvents(api);
}

run().catch((e: unknown) => fatal(e instanceof Error ? e.message : String(e)));

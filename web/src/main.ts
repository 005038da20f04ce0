// The fan's page: sign in, queue, choose seats, hold and pay, tickets.

import "./style.css";
import { clients } from "./clients.js";
import { eventId, loadConfig, presaleCode } from "./config.js";
import { h, show } from "./dom.js";
import { explain, failure } from "./errors.js";
import { holdAndPay } from "./hold.js";
import { queue } from "./queue.js";
import { chooseSeats } from "./seats.js";
import { forget, signIn } from "./session.js";
import { showTickets } from "./tickets.js";
import { Venue } from "./venue.js";

function fatal(text: string): void {
  const again = h("button", { type: "button" }, "Start again");
  again.addEventListener("click", () => window.location.reload());
  show("Something went wrong", h("h2", {}, "Something went wrong"), h("p", { role: "alert" }, text), again);
}

let services: string[] = [];

/** A call that never reached a service: most often a certificate the browser does not trust. */
function unreachable(error: unknown): boolean {
  const f = failure(error);
  return f.reason === "" && /fetch|network/i.test(f.message);
}

async function run(): Promise<void> {
  const config = await loadConfig();
  services = Object.values(config.services);
  const event = eventId(config);
  if (!event) {
    show(
      "No event",
      h("h2", {}, "No event on sale"),
      h("p", {}, "Open this page with the event in its address: ?event=<event id>."),
    );
    return;
  }
  const session = await signIn(config);
  document.getElementById("who")!.textContent = `Signed in as ${session.fanId}`;
  const api = clients(config, session.token);
  const code = presaleCode();
  const admission = await queue(api, event, code);
  const layout = (await api.seatMap.getLayout({ eventId: event })).layout;
  if (!layout) throw new Error("the seat map answered without a layout");
  document.getElementById("title")!.textContent = layout.venueName || "Tickets";
  const venue = new Venue(layout);
  let notice = "";
  for (;;) {
    const hold = await chooseSeats(api, event, admission, venue, notice, code);
    const outcome = await holdAndPay(api, hold, venue, config.mode);
    if (outcome.kind === "paid") {
      showTickets(outcome.order, venue);
      return;
    }
    notice =
      outcome.kind === "expired"
        ? "Your hold ran out and the seats went back on sale. Choose again."
        : "You gave the seats back. Choose again.";
  }
}

run().catch((e: unknown) => {
  if (unreachable(e)) {
    const list = h("ul", {}, ...services.map((url) => h("li", {}, h("a", { href: url }, url))));
    show(
      "Services unreachable",
      h("h2", {}, "The ticket services cannot be reached"),
      h(
        "p",
        { role: "alert" },
        "Your browser could not connect. On a local run the services use the run's own TLS authority: " +
          "make your browser trust it (the ca.crt file that stadium up prints), or open each address below once and accept its certificate, then reload.",
      ),
      list,
    );
    return;
  }
  const f = failure(e);
  if (f.reason.startsWith("TOKEN_")) forget();
  fatal(f.reason ? explain(f) : e instanceof Error ? e.message : String(e));
});

// The events and their state (the box office's ListEvents): a table whose event names
// link to the event's live view (`?event=<id>`).

import { EventStatus, type Event } from "../gen/stadium/box_office/v1/box_office_pb.js";
import { h, show } from "../dom.js";
import type { StaffClients } from "./clients.js";
import { count, dateTime, enumName, words } from "./format.js";
import { showProblem } from "./problem.js";

const PAGES = 10;

function row(event: Event): HTMLTableRowElement {
  const status = enumName(EventStatus, event.status) || "UNSPECIFIED";
  const rate = event.settings?.admissionRatePerMin ?? 0;
  return h(
    "tr",
    { "data-event-id": event.eventId, "data-sale-state": status },
    h(
      "td",
      { "data-label": "Event" },
      h(
        "span",
        {},
        h("a", { href: `?event=${encodeURIComponent(event.eventId)}` }, event.settings?.name || `Event ${event.eventId}`),
        h("span", { class: "muted" }, ` #${event.eventId}`),
      ),
    ),
    h("td", { "data-label": "Status" }, words(status)),
    h("td", { "data-label": "On sale from" }, dateTime(event.settings?.onsaleAt)),
    h("td", { "data-label": "Rate" }, `${count(rate)}/min`),
  );
}

/** Shows every event with its state; picking one opens its live view. */
export async function showEvents(api: StaffClients): Promise<void> {
  const problem = h("div", { id: "events-problem", role: "alert" });
  const rows = h("tbody", {});
  const status = h("p", { id: "events-status", role: "status" }, "Loading the events…");
  show(
    "Events",
    h("h2", {}, "Events"),
    h(
      "section",
      { class: "card", "aria-labelledby": "events-caption" },
      status,
      problem,
      h(
        "div",
        { class: "table-frame" },
        h(
          "table",
          { id: "events-table", class: "stack" },
          h("caption", { id: "events-caption" }, "Pick an event to run its sale"),
          h(
            "thead",
            {},
            h("tr", {}, ...["Event", "Status", "On sale from", "Rate"].map((t) => h("th", { scope: "col" }, t))),
          ),
          rows,
        ),
      ),
    ),
  );
  try {
    const events: Event[] = [];
    let pageToken = "";
    for (let page = 0; page < PAGES; page += 1) {
      const answer = await api.boxOffice.listEvents({ page: { pageSize: 100, pageToken } });
      events.push(...answer.events);
      pageToken = answer.nextPageToken;
      if (pageToken === "") break;
    }
    rows.replaceChildren(...events.map(row));
    status.textContent = events.length === 0 ? "There are no events yet." : `${events.length} events.`;
  } catch (e) {
    status.textContent = "";
    showProblem(problem, e);
  }
}

// One event's live view: its state and sale control, the admission rate and cap, the
// dashboard (queue, holds and sales over time, sections, SEAT_TAKEN rate: every second;
// the invariant canary: every 5 s) and a fan's orders with refund. Each panel refreshes
// on its own, its calls under a deadline, so one slow or failing service holds up only
// its own panel; everything stops when the view goes or the staff session ends.

import { ReportGrouping, type Event } from "../gen/stadium/box_office/v1/box_office_pb.js";
import { h, show } from "../dom.js";
import { CanaryPanel, CANARY_PERIOD_MS } from "./canary.js";
import { ChartPanel } from "./chart.js";
import { READ_TIMEOUT_MS, type StaffClients } from "./clients.js";
import { ms } from "./format.js";
import { HeatMapPanel } from "./heatmap.js";
import { OrdersPanel } from "./orders.js";
import { clearProblem, describe, showProblem } from "./problem.js";
import { QueuePanel } from "./queue-panel.js";
import { RateForm } from "./rate-form.js";
import { SaleControl } from "./sale.js";
import { SeatTakenPanel } from "./seat-taken.js";
import { Ticker } from "./ticker.js";

/** How often the dashboard refreshes. */
const DASHBOARD_PERIOD_MS = 1000;

function eventName(event: Event): string {
  return event.settings?.name || `Event ${event.eventId}`;
}

/**
 * Shows the event's live view and keeps it refreshing while the tab is visible, until
 * `ended` (the staff session's end) aborts.
 */
export async function showEvent(api: StaffClients, eventId: string, ended: AbortSignal): Promise<void> {
  let event: Event | undefined;
  try {
    event = (await api.boxOffice.getEvent({ eventId })).event;
    if (!event) throw new Error("the box office answered without the event");
  } catch (e) {
    if (ended.aborted) return; // the sign-in has taken the page over
    show(
      "Event unavailable",
      h("h2", {}, `Event ${eventId}`),
      h("p", { class: "card error", role: "alert", "data-reason": describe(e).reason }, describe(e).text),
      h("p", {}, h("a", { href: "?events" }, "All events")),
    );
    return;
  }

  const title = h("h2", {}, eventName(event));
  const eventProblem = h("div", { id: "event-problem", role: "alert" });
  const onEvent = (e: Event) => {
    title.textContent = eventName(e);
    sale.update(e);
    rate.update(e);
    queue.update(e);
  };
  const sale = new SaleControl(api, eventId, onEvent);
  const rate = new RateForm(api, eventId, onEvent);
  const queue = new QueuePanel(api, eventId);
  const chart = new ChartPanel(api, eventId);
  const heat = new HeatMapPanel();
  const seatTaken = new SeatTakenPanel(api, eventId);
  const canary = new CanaryPanel(api, eventId);
  const orders = new OrdersPanel(api, eventId);
  onEvent(event);

  show(
    eventName(event),
    h(
      "div",
      { class: "event-head" },
      title,
      sale.state,
      h("p", { class: "muted" }, `Event #${eventId} · `, h("a", { href: "?events" }, "All events")),
    ),
    eventProblem,
    h("div", { class: "controls" }, sale.element, rate.element),
    h(
      "section",
      { class: "dashboard", "aria-label": "Live dashboard, refreshed every second" },
      queue.panel.element,
      chart.panel.element,
      heat.panel.element,
      seatTaken.panel.element,
      canary.panel.element,
    ),
    orders.element,
  );

  const read = { timeoutMs: READ_TIMEOUT_MS };
  const refreshEvent = async () => {
    try {
      const now = (await api.boxOffice.getEvent({ eventId }, read)).event;
      if (now) onEvent(now);
      clearProblem(eventProblem);
    } catch (e) {
      showProblem(eventProblem, e);
    }
  };
  // One report a second feeds the heat map and the chart; each says on its own when it failed.
  const refreshReport = async () => {
    const report = api.boxOffice.getSalesReport({ eventId, groupBy: ReportGrouping.SECTION }, read);
    await Promise.all([
      heat.panel.refresh(async () => {
        const r = await report;
        heat.show(r);
        return ms(r.asOf) ?? Date.now();
      }),
      chart.panel.refresh(async () => {
        const r = await report;
        const at = ms(r.asOf) ?? Date.now();
        chart.add(at, r.total?.held ?? 0, r.total?.sold ?? 0);
        return at;
      }),
    ]);
  };
  // Each its own loop: a run still waiting for its answer holds up no other.
  const tickers = [
    new Ticker(DASHBOARD_PERIOD_MS, refreshEvent),
    new Ticker(DASHBOARD_PERIOD_MS, () => queue.refresh()),
    new Ticker(DASHBOARD_PERIOD_MS, refreshReport),
    new Ticker(DASHBOARD_PERIOD_MS, () => seatTaken.refresh()),
    new Ticker(CANARY_PERIOD_MS, () => canary.refresh()),
  ];
  const stop = () => {
    for (const ticker of tickers) ticker.stop();
  };
  window.addEventListener("pagehide", stop);
  ended.addEventListener("abort", stop);
  if (ended.aborted) return;
  void chart.loadHistory();
  for (const ticker of tickers) ticker.start();
}

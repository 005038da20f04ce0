// The queue, live: fans waiting, the frontier (`admitted`), active admitted fans
// against the cap, paused and sold out (the waiting room's GetQueueStats); and the
// admitted per second measured from successive samples (`#admitted-per-second`)
// next to the configured rate (`#configured-per-second`), both with one decimal. The
// waiting room learns of an event when its sale opens: a DRAFT event's queue is not
// asked for, and the panel says when it starts (`#queue-note`). While the event runs a
// presale (or the presale is paused) the panel reads the presale's own queue, where the
// code holders are, and says so (`#queue-which`).

import { EventStatus, type Event } from "../gen/stadium/box_office/v1/box_office_pb.js";
import { SaleState, type GetQueueStatsResponse } from "../gen/stadium/waiting_room/v1/waiting_room_pb.js";
import { presaleQueue } from "../config.js";
import { h } from "../dom.js";
import { READ_TIMEOUT_MS, type StaffClients } from "./clients.js";
import { count, enumName, ms, oneDecimal, words } from "./format.js";
import { Panel } from "./panel.js";
import { RateMeter } from "./rate-meter.js";

/** A term and its value for the panel's list. */
function item(term: string, value: HTMLElement): HTMLElement[] {
  return [h("dt", {}, term), h("dd", {}, value)];
}

export class QueuePanel {
  readonly panel = new Panel("queue", "Queue");
  private meter = new RateMeter(5000);
  private queueId: string;
  private readonly which = h("span", { id: "queue-which" }, "…");
  private readonly perSecond = h("span", { id: "admitted-per-second" }, "…");
  private readonly configured = h("span", { id: "configured-per-second" }, "…");
  private readonly gauge = h("meter", { id: "admission-gauge", min: 0, max: 1, value: 0, "aria-labelledby": "admission-gauge-label" });
  private readonly waiting = h("span", { id: "queue-waiting" }, "…");
  private readonly admitted = h("span", { id: "queue-admitted" }, "…");
  private readonly active = h("span", { id: "queue-active" }, "…");
  private readonly state = h("span", { id: "queue-sale-state", "data-queue-sale-state": "UNSPECIFIED" }, "…");
  private readonly flags = h("span", { id: "queue-flags" }, "…");
  private readonly stats = h("div", {});
  private readonly note = h("p", { id: "queue-note", hidden: true }, "The queue starts when the sale opens.");
  private draft = false;

  constructor(
    private readonly api: StaffClients,
    private readonly eventId: string,
  ) {
    this.queueId = eventId;
    this.stats.append(
      h(
        "p",
        { class: "big rate-line" },
        this.perSecond,
        " admitted per second",
        h("span", { class: "muted" }, " · configured ", this.configured),
      ),
      h("label", { id: "admission-gauge-label", for: "admission-gauge", class: "muted" }, "Admitted against the configured rate"),
      this.gauge,
      h(
        "dl",
        { class: "facts" },
        ...item("Queue", this.which),
        ...item("Waiting in the queue", this.waiting),
        ...item("Admitted so far", this.admitted),
        ...item("Active admitted / cap", this.active),
        ...item("Waiting room", this.state),
        ...item("Admission", this.flags),
      ),
    );
    this.panel.body.append(this.note, this.stats);
  }

  /** Follows the event's status: no queue to read while it is a draft; the presale's during a presale. */
  update(event: Event): void {
    this.draft = event.status === EventStatus.DRAFT;
    const presale =
      event.status === EventStatus.PRESALE ||
      (event.status === EventStatus.PAUSED && event.pausedFrom === EventStatus.PRESALE);
    const queueId = presale ? presaleQueue(this.eventId) : this.eventId;
    if (queueId !== this.queueId) {
      this.queueId = queueId;
      this.meter = new RateMeter(5000);
    }
    this.which.textContent = presale ? "Presale queue (code holders)" : "General sale";
  }

  /** Reads the queue's counters and shows them (a draft's: says when the queue starts). */
  refresh(): Promise<void> {
    this.note.hidden = !this.draft;
    this.stats.hidden = this.draft;
    if (this.draft) {
      this.panel.idle();
      return Promise.resolve();
    }
    return this.panel.refresh(async () => {
      const stats = await this.api.waitingRoom.getQueueStats({ eventId: this.queueId }, { timeoutMs: READ_TIMEOUT_MS });
      return this.show(stats);
    });
  }

  /** Shows `stats`; returns when they are as of. */
  private show(stats: GetQueueStatsResponse): number {
    const at = ms(stats.asOf) ?? Date.now();
    this.meter.add(at, Number(stats.admitted));
    const measured = this.meter.perSecond();
    const configured = stats.fansPerMinute / 60;
    this.perSecond.textContent = measured === null ? "…" : oneDecimal(measured);
    this.configured.textContent = oneDecimal(configured);
    this.gauge.max = Math.max(configured, measured ?? 0, 0.1) * 1.25;
    this.gauge.optimum = configured;
    this.gauge.value = measured ?? 0;
    this.gauge.title = `${measured === null ? "not measured yet" : oneDecimal(measured)} of ${oneDecimal(configured)} per second`;
    this.waiting.textContent = count(stats.waiting);
    this.admitted.textContent = count(stats.admitted);
    this.active.textContent = `${count(stats.activeAdmitted)} / ${stats.activeFanCap === 0 ? "no cap" : count(stats.activeFanCap)}`;
    const state = enumName(SaleState, stats.state) || "UNSPECIFIED";
    this.state.dataset["queueSaleState"] = state;
    this.state.textContent = words(state);
    const flags = [stats.paused ? "paused" : "running"];
    if (stats.soldOut) flags.push("sold out");
    this.flags.textContent = words(flags.join(", "));
    return at;
  }
}

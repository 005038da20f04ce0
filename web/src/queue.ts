// The waiting room: join, then follow the fan's place live over WatchStatus until the
// admission token comes. Before opening a countdown (and a way to enter a presale
// code); while waiting the position, an estimate and a progress bar; paused, closed,
// sold out and cancelled say so. With a presale code the fan queues in the event's
// presale queue, or in its own once the presale is over.

import { QueueState, type QueueStatus } from "./gen/stadium/waiting_room/v1/waiting_room_pb.js";
import type { Clients } from "./clients.js";
import { presaleQueue } from "./config.js";
import { announce, duration, h, show } from "./dom.js";
import { explain, failure } from "./errors.js";

/** What the queue gives an admitted fan. */
export interface Admission {
  token: string;
  /** Given by the event's presale queue: it claims only with the presale code. */
  presale: boolean;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Renders one status; keeps the countdown ticking between answers. */
class QueueView {
  private ticker: number | undefined;
  private firstPosition = 0n;
  private lastState: QueueState | undefined;

  /** `offerCode`: the pre-queue card lets the fan enter a presale code. */
  constructor(private readonly offerCode: boolean) {}

  render(status: QueueStatus): void {
    window.clearInterval(this.ticker);
    const changed = status.state !== this.lastState;
    this.lastState = status.state;
    switch (status.state) {
      case QueueState.PRE_QUEUE:
        return this.preQueue(status, changed);
      case QueueState.WAITING:
        return this.waiting(status, changed);
      case QueueState.ADMITTED:
      case QueueState.WAITING_LIST_OFFER:
        return this.plain("admitted", "It's your turn", "Taking you to the seats…", changed);
      case QueueState.PAUSED:
        return this.plain(
          "paused",
          "The sale is paused",
          "Keep this page open: your place in the queue is kept and the sale resumes here.",
          changed,
        );
      case QueueState.CLOSED:
        return this.plain("closed", "The sale is closed", "No more tickets are sold for this event.", changed);
      case QueueState.SOLD_OUT:
        return this.plain(
          "sold-out",
          "Sold out",
          "Every seat is sold. If seats come back, the queue moves on and your number still holds.",
          changed,
        );
      case QueueState.CANCELLED:
        return this.plain("cancelled", "The event is cancelled", "Paid orders are refunded.", changed);
      default:
        return this.plain("waiting", "In the queue", "Waiting for the queue's answer…", changed);
    }
  }

  private plain(state: string, title: string, text: string, changed: boolean): void {
    if (!changed) return;
    show(title, h("section", { class: "card", "data-queue-state": state }, h("h2", {}, title), h("p", {}, text)));
    announce(`${title}. ${text}`);
  }

  private preQueue(status: QueueStatus, changed: boolean): void {
    // In the pre-queue the estimated wait is the time to opening (the poll hint is
    // capped at a minute, so it is not).
    const opensAt = Date.now() + Number(status.estimatedWaitMs);
    const existing = document.getElementById("countdown");
    const timer = !changed && existing ? existing : h("p", { id: "countdown", class: "big", role: "timer", "aria-live": "off" });
    const tick = () => {
      const left = opensAt - Date.now();
      timer.textContent = left > 0 ? `Opens in ${duration(left)}` : "Opening now…";
    };
    tick();
    this.ticker = window.setInterval(tick, 1000);
    if (!changed && existing) return;
    show(
      "Before the opening",
      h(
        "section",
        { class: "card", "data-queue-state": "pre-queue" },
        h("h2", {}, "You're in before the opening"),
        timer,
        h(
          "p",
          {},
          "Everyone who joins before the opening gets a place in a random order at the opening time. Keep this page open.",
        ),
        ...(this.offerCode ? [codeForm()] : []),
      ),
    );
    if (changed) announce(`You're in before the opening. ${timer.textContent}.`);
  }

  private waitingView: { position: HTMLElement; progress: HTMLProgressElement; eta: HTMLElement; number: HTMLElement } | null = null;

  private waiting(status: QueueStatus, changed: boolean): void {
    const position = status.position;
    if (position > this.firstPosition) this.firstPosition = position;
    const total = this.firstPosition > 0n ? this.firstPosition : 1n;
    const eta = Number(status.estimatedWaitMs);
    // Built once, then updated in place: focus stays where the fan left it.
    if (changed || !this.waitingView) {
      const view = {
        position: h("strong", { id: "position" }),
        progress: h("progress", { id: "queue-progress" }),
        eta: h("p", { id: "eta" }),
        number: h("p", { class: "muted" }),
      };
      this.waitingView = view;
      show(
        "In the queue",
        h(
          "section",
          { class: "card", "data-queue-state": "waiting" },
          h("h2", {}, "You're in the queue"),
          h("p", { class: "big" }, "Fans ahead of you: ", view.position),
          h("label", { for: "queue-progress" }, "Progress"),
          view.progress,
          view.eta,
          view.number,
        ),
      );
    }
    const view = this.waitingView;
    view.position.textContent = position.toString();
    view.progress.max = Number(total);
    view.progress.value = Number(total - position);
    // With nobody ahead, the fan waits only for an admitted fan to finish (a cap).
    view.eta.textContent =
      eta < 1000
        ? position === 0n
          ? "Estimated wait: you're next, as soon as a place frees up"
          : "Estimated wait: any moment now"
        : `Estimated wait: about ${duration(eta)}`;
    view.number.textContent = `Your queue number is ${status.queueNumber.toString()}.`;
    if (changed || position % 10n === 0n) {
      announce(`Fans ahead of you: ${position}. Estimated wait about ${duration(eta)}.`);
    }
  }

  stop(): void {
    window.clearInterval(this.ticker);
  }
}

/**
 * A form for a presale code: it reloads the page with the code in the address, so the
 * fan queues in the presale's queue (the place in this queue is kept for the general
 * sale).
 */
function codeForm(): HTMLFormElement {
  const input = h("input", { id: "presale-code", name: "code", autocomplete: "off", required: true, spellcheck: "false" });
  const form = h(
    "form",
    { id: "presale-form", class: "field" },
    h("label", { for: "presale-code" }, "Have a presale code?"),
    input,
    h("button", { type: "submit", class: "secondary" }, "Use my code"),
  );
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const address = new URL(window.location.href);
    address.searchParams.set("code", input.value.trim());
    window.location.assign(address.toString());
  });
  return form;
}

/** Joins `eventId`'s queue, waiting out a busy or restoring waiting room. */
async function join(api: Clients, eventId: string): Promise<QueueStatus> {
  for (;;) {
    try {
      const status = (await api.waitingRoom.join({ eventId })).status;
      if (!status) throw new Error("the waiting room answered without a status");
      return status;
    } catch (e) {
      const f = failure(e);
      if (f.reason === "OVERLOADED" || f.reason === "QUEUE_RESTORING" || f.code === "14") {
        await sleep(Number(f.metadata["retry_after_ms"] ?? 1000));
        continue;
      }
      throw e;
    }
  }
}

/**
 * Joins the event's queue (with a presale code, its presale queue: once that is closed
 * or the event has none, its own) and resolves with the admission once the fan's turn
 * comes.
 */
export async function queue(api: Clients, event: string, code: string | null): Promise<Admission> {
  const view = new QueueView(code === null);
  let eventId = code === null ? event : presaleQueue(event);
  /** The presale is over (or never ran): the general sale's queue; the code still opens its seats. */
  const general = async (): Promise<QueueStatus> => {
    eventId = event;
    announce("The presale is not running: you are in the general sale's queue.");
    return join(api, event);
  };
  let status: QueueStatus;
  try {
    status = await join(api, eventId);
  } catch (e) {
    const f = failure(e);
    if (eventId === event || (f.reason !== "EVENT_NOT_ON_SALE" && f.reason !== "EVENT_NOT_FOUND")) throw e;
    status = await general();
  }
  view.render(status);
  let ticket = status.queueTicket;
  for (;;) {
    if (status.admissionToken !== "") {
      view.stop();
      return { token: status.admissionToken, presale: eventId !== event };
    }
    if (status.state === QueueState.CLOSED && eventId !== event) {
      status = await general();
      view.render(status);
      ticket = status.queueTicket;
      continue;
    }
    if (status.state === QueueState.CLOSED || status.state === QueueState.CANCELLED) {
      view.stop();
      return new Promise(() => {});
    }
    try {
      for await (const answer of api.waitingRoom.watchStatus({ queueTicket: ticket, eventId })) {
        if (!answer.status) continue;
        status = answer.status;
        if (status.queueTicket !== "") ticket = status.queueTicket;
        // A closed presale queue is left for the general one without showing it.
        if (status.state === QueueState.CLOSED && eventId !== event) break;
        view.render(status);
        if (status.admissionToken !== "" || status.state === QueueState.CLOSED) break;
      }
    } catch (e) {
      const f = failure(e);
      if (f.reason === "ADMISSION_EXPIRED" || f.reason === "ADMISSION_REVOKED") {
        view.stop();
        throw new Error(explain(f));
      }
      await sleep(Number(f.metadata["retry_after_ms"] ?? 1000));
      continue;
    }
    if (status.admissionToken === "" && status.state !== QueueState.CLOSED && status.pollAfterMs > 0n) {
      await sleep(Math.min(Number(status.pollAfterMs), 30_000));
    }
  }
}

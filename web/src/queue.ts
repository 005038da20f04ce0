// The waiting room: join, then follow the fan's place live over WatchStatus until the
// admission token comes. Before opening a countdown; while waiting the position, an
// estimate and a progress bar; paused, closed, sold out and cancelled say so.

import { QueueState, type QueueStatus } from "./gen/stadium/waiting_room/v1/waiting_room_pb.js";
import type { Clients } from "./clients.js";
import { announce, duration, h, show } from "./dom.js";
import { explain, failure } from "./errors.js";

/** What the queue gives an admitted fan. */
export interface Admission {
  token: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Renders one status; keeps the countdown ticking between answers. */
class QueueView {
  private ticker: number | undefined;
  private firstPosition = 0n;
  private lastState: QueueState | undefined;

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
    // The pre-queue's poll hint is the time to opening (plus up to 2 s of spread).
    const opensAt = Date.now() + Number(status.pollAfterMs);
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

/** Joins the event's queue and resolves with the admission once the fan's turn comes. */
export async function queue(api: Clients, eventId: string): Promise<Admission> {
  const view = new QueueView();
  let status: QueueStatus | undefined;
  for (;;) {
    try {
      status = (await api.waitingRoom.join({ eventId })).status;
      break;
    } catch (e) {
      const f = failure(e);
      if (f.reason === "OVERLOADED" || f.reason === "QUEUE_RESTORING" || f.code === "14") {
        await sleep(Number(f.metadata["retry_after_ms"] ?? 1000));
        continue;
      }
      throw e;
    }
  }
  if (!status) throw new Error("the waiting room answered without a status");
  view.render(status);
  let ticket = status.queueTicket;
  for (;;) {
    if (status.admissionToken !== "") {
      view.stop();
      return { token: status.admissionToken };
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
        view.render(status);
        if (status.admissionToken !== "") break;
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
    if (status.admissionToken === "" && status.pollAfterMs > 0n) {
      await sleep(Math.min(Number(status.pollAfterMs), 30_000));
    }
  }
}

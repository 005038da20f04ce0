// Holding: a countdown from the server's `expires_in_ms` (never a clock of the page's
// own against an absolute time), extend within the event's cap, release; and the
// payment form for the simulated provider's test cards.

import type { Hold } from "./gen/stadium/holds/v1/holds_pb.js";
import { OrderStatus, type Order } from "./gen/stadium/payments/v1/payments_pb.js";
import type { Clients } from "./clients.js";
import { announce, duration, h, show } from "./dom.js";
import { explain, failure } from "./errors.js";
import type { Venue } from "./venue.js";

/** How a hold ended: paid (the order) or given up (back to the map). */
export type HoldOutcome = { kind: "paid"; order: Order } | { kind: "released" } | { kind: "expired" };

/** Seconds left at which the countdown is announced. */
const ANNOUNCE_AT_S = [1800, 600, 300, 120, 60, 30, 10];

/** The simulated provider's test cards (payments.proto: PaymentMethod). */
const TEST_CARDS = [
  { token: "tok_visa", label: "Test card that pays (tok_visa)" },
  { token: "tok_decline", label: "Test card that is declined (tok_decline)" },
];

/** Shows the hold until it is paid, released or runs out. */
export function holdAndPay(api: Clients, hold: Hold, venue: Venue, mode: string): Promise<HoldOutcome> {
  return new Promise((resolve) => {
    // A monotonic deadline from the server's answer: immune to the page's wall clock.
    let deadline = performance.now() + Number(hold.expiresInMs);
    let paying = false;
    let lastAnnounced = -1;
    const timer = h("p", { id: "hold-countdown", class: "big", role: "timer", "aria-live": "off" });
    const message = h("div", { id: "hold-message", role: "alert" });
    const tick = () => {
      const left = deadline - performance.now();
      if (left <= 0 && !paying) {
        window.clearInterval(ticker);
        resolve({ kind: "expired" });
        return;
      }
      timer.textContent = paying ? "Paying…" : `Seats held for ${duration(left)}`;
      // Screen readers hear the time left as it passes a few marks, not every second.
      const due = ANNOUNCE_AT_S.filter((t) => Math.ceil(left / 1000) <= t).pop();
      if (!paying && due !== undefined && due !== lastAnnounced) {
        lastAnnounced = due;
        announce(`Your seats are held for ${duration(left)}.`);
      }
    };
    const ticker = window.setInterval(tick, 1000);
    tick();
    const done = (outcome: HoldOutcome) => {
      window.clearInterval(ticker);
      resolve(outcome);
    };
    const say = (kind: string, text: string) => {
      message.className = `card ${kind}`;
      message.replaceChildren(h("p", {}, text));
    };

    const extend = h("button", { type: "button", id: "extend-hold", class: "secondary" }, "More time");
    extend.addEventListener("click", () => {
      void (async () => {
        try {
          const answer = await api.holds.extendHold({ holdKey: hold.holdKey });
          if (answer.hold) deadline = performance.now() + Number(answer.hold.expiresInMs);
          tick();
          say("info", `Extended: ${timer.textContent}.`);
        } catch (e) {
          const f = failure(e);
          if (f.reason === "HOLD_LIFETIME_REACHED") extend.disabled = true;
          say("warning", explain(f));
        }
      })();
    });
    const release = h("button", { type: "button", id: "release-hold", class: "secondary" }, "Give the seats back");
    release.addEventListener("click", () => {
      void (async () => {
        try {
          await api.holds.releaseHold({ holdKey: hold.holdKey });
          done({ kind: "released" });
        } catch (e) {
          say("error", explain(failure(e)));
        }
      })();
    });

    const cards = h(
      "fieldset",
      {},
      h("legend", {}, "Card"),
      ...TEST_CARDS.map((card, i) =>
        h(
          "div",
          { class: "field inline" },
          h("input", { type: "radio", name: "card", id: `card-${card.token}`, value: card.token, checked: i === 0 }),
          h("label", { for: `card-${card.token}` }, card.label),
        ),
      ),
    );
    const pay = h("button", { type: "submit", id: "pay" }, "Pay");
    const form = h(
      "form",
      { class: "card", id: "payment", "aria-labelledby": "pay-title" },
      h("h3", { id: "pay-title" }, "Payment"),
      h(
        "p",
        { class: "muted" },
        mode === "development"
          ? "Development mode: the simulated provider takes these test cards."
          : "Test cards of the payment provider.",
      ),
      cards,
      pay,
    );
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const token = new FormData(form).get("card");
      if (typeof token !== "string") return;
      paying = true;
      pay.disabled = extend.disabled = release.disabled = true;
      tick();
      void (async () => {
        try {
          const answer = await api.payments.confirm({ holdKey: hold.holdKey, paymentMethod: { token } });
          const order = answer.order;
          if (order && (order.status === OrderStatus.PAID || order.status === OrderStatus.COMP)) {
            done({ kind: "paid", order });
            return;
          }
          if (order?.status === OrderStatus.REFUNDED) {
            say("error", "The hold ran out before the payment arrived: the money was refunded.");
            done({ kind: "expired" });
            return;
          }
          say("warning", "The payment is still being processed; try Pay again in a moment.");
        } catch (e) {
          say("error", explain(failure(e)));
        }
        // A payment that started moved the hold into its payment window: read its time
        // left again from the server rather than keep the old countdown.
        try {
          const current = (await api.holds.getHold({ holdKey: hold.holdKey })).hold;
          if (current) deadline = performance.now() + Number(current.expiresInMs);
        } catch {
          // Keep the countdown as it was; the next answer corrects it.
        }
        paying = false;
        pay.disabled = release.disabled = false;
        extend.disabled = false;
        tick();
      })();
    });

    show(
      "Your seats",
      h("h2", {}, "Your seats are held"),
      timer,
      h("ul", { id: "held-seats" }, ...hold.seatIds.map((id) => h("li", {}, venue.describe(id)))),
      h("div", { class: "actions" }, extend, release),
      message,
      form,
    );
  });
}

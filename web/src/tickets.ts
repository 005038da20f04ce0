// The tickets of a paid order, each with a QR code of its signed ticket code.

import qrcode from "qrcode-generator";
import type { Order } from "./gen/stadium/payments/v1/payments_pb.js";
import { announce, h, money, show } from "./dom.js";
import type { Venue } from "./venue.js";

/** An SVG QR code of `text` (error correction M), with a label for screen readers. */
function qr(text: string, label: string): HTMLElement {
  const code = qrcode(0, "M");
  code.addData(text);
  code.make();
  const box = h("div", { class: "qr", role: "img", "aria-label": label });
  box.innerHTML = code.createSvgTag({ cellSize: 4, margin: 2, scalable: true });
  return box;
}

/** Shows the order's tickets. */
export function showTickets(order: Order, venue: Venue): void {
  const total = order.amount ? money(order.amount.amountMinor, order.amount.currency) : "";
  show(
    "Your tickets",
    h("h2", {}, "Your tickets"),
    h("p", {}, `Order ${order.orderId}${total ? `, ${total}` : ""}. Show a code at the gate.`),
    h(
      "ol",
      { id: "tickets", class: "tickets" },
      ...order.tickets.map((t) =>
        h(
          "li",
          { class: "card ticket", "data-ticket-code": t.ticketCode },
          h("h3", {}, venue.describe(t.seatId)),
          qr(t.ticketCode, `QR code of the ticket for ${venue.describe(t.seatId)}`),
          h("p", { class: "code" }, t.ticketCode),
        ),
      ),
    ),
  );
  announce(`Paid. ${order.tickets.length} tickets.`);
}

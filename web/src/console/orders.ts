// A fan's orders for the event (payments' ListOrders, naming the fan), each row with
// `data-order-id` and `data-order-status` (the status's enum name: PAID, REFUNDED, …);
// a paid order has a Refund button that asks in the page, then refunds through the box
// office (RefundOrder) and shows the order as payments has it afterwards. A new search
// or a failed one clears the last fan's rows; the fan id is checked first (not blank,
// at most 128 bytes in UTF-8, as the services count it).

import { OrderStatus, type Order } from "../gen/stadium/payments/v1/payments_pb.js";
import { announce, h, money } from "../dom.js";
import type { StaffClients } from "./clients.js";
import { confirmInPage } from "./confirm.js";
import { dateTime, enumName, words } from "./format.js";
import { clearProblem, showProblem } from "./problem.js";

const PAGES = 5;
/** The longest fan id the services take, in UTF-8 bytes. */
const FAN_ID_MAX_BYTES = 128;
/** How many times a refund under way is looked at again, a second apart. */
const SETTLE_TRIES = 30;

function cell(label: string, ...children: (Node | string)[]): HTMLTableCellElement {
  return h("td", { "data-label": label }, ...children);
}

export class OrdersPanel {
  readonly element: HTMLElement;
  private readonly fan = h("input", {
    id: "orders-fan",
    name: "fan_id",
    type: "text",
    required: true,
    maxlength: FAN_ID_MAX_BYTES,
    autocomplete: "off",
    "aria-describedby": "orders-fan-error",
  });
  private readonly fanError = h("p", { id: "orders-fan-error", class: "field-error" });
  private readonly find = h("button", { type: "submit", id: "orders-find" }, "Find orders");
  private readonly rows = h("tbody", {});
  private readonly table = h(
    "table",
    { id: "orders-table", class: "stack", hidden: true },
    h("caption", { id: "orders-caption", class: "visually-hidden" }, "Orders"),
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        ...["Order", "Status", "Seats", "Amount", "Created"].map((t) => h("th", { scope: "col" }, t)),
        h("th", { scope: "col" }, h("span", { class: "visually-hidden" }, "Action")),
      ),
    ),
    this.rows,
  );
  private readonly summary = h("p", { id: "orders-summary", role: "status" });
  private readonly message = h("div", { id: "orders-message", role: "status" });
  private readonly problem = h("div", { id: "orders-problem", role: "alert" });
  private readonly confirmSlot = h("div", {});

  constructor(
    private readonly api: StaffClients,
    private readonly eventId: string,
  ) {
    const form = h(
      "form",
      { id: "orders-search", class: "inline-form", novalidate: true },
      h("div", { class: "field" }, h("label", { for: "orders-fan" }, "Fan id"), this.fan, this.fanError),
      this.find,
    );
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      void this.search(this.fan.value.trim());
    });
    this.fan.addEventListener("input", () => this.invalid(""));
    this.element = h(
      "section",
      { id: "orders", class: "card", "aria-labelledby": "orders-title" },
      h("h3", { id: "orders-title" }, "A fan's orders"),
      form,
      this.problem,
      this.summary,
      this.confirmSlot,
      this.message,
      h("div", { class: "table-frame" }, this.table),
    );
  }

  /** Marks the fan id invalid with `text` (said at once when the field has focus), or valid with "". */
  private invalid(text: string): void {
    this.fanError.textContent = text;
    if (!text) {
      this.fan.removeAttribute("aria-invalid");
      return;
    }
    this.fan.setAttribute("aria-invalid", "true");
    if (document.activeElement === this.fan) announce(text);
    else this.fan.focus();
  }

  /** Empties the table, its caption, the summary and any refund question of the last search. */
  private clear(): void {
    this.rows.replaceChildren();
    this.table.hidden = true;
    this.table.querySelector("caption")!.textContent = "Orders";
    this.summary.textContent = "";
    this.message.textContent = "";
    this.confirmSlot.replaceChildren();
    clearProblem(this.problem);
  }

  private async search(fanId: string): Promise<void> {
    this.clear();
    if (fanId === "") {
      this.invalid("Enter a fan id.");
      return;
    }
    const bytes = new TextEncoder().encode(fanId).length;
    if (bytes > FAN_ID_MAX_BYTES) {
      this.invalid(`That fan id is too long: at most ${FAN_ID_MAX_BYTES} bytes in UTF-8, and it has ${bytes}.`);
      return;
    }
    this.invalid("");
    this.find.disabled = true;
    this.summary.textContent = `Finding the orders of ${fanId}…`;
    try {
      const orders: Order[] = [];
      let pageToken = "";
      for (let page = 0; page < PAGES; page += 1) {
        const answer = await this.api.payments.listOrders({ fanId, eventId: this.eventId, page: { pageSize: 100, pageToken } });
        orders.push(...answer.orders);
        pageToken = answer.nextPageToken;
        if (pageToken === "") break;
      }
      this.rows.replaceChildren(...orders.map((o) => this.row(o)));
      this.table.hidden = orders.length === 0;
      this.table.querySelector("caption")!.textContent = `Orders of ${fanId}`;
      this.summary.textContent =
        orders.length === 0
          ? `${fanId} has no orders for this event.`
          : `${orders.length} order${orders.length === 1 ? "" : "s"} of ${fanId}${pageToken ? " (the newest; there are more)" : ""}.`;
    } catch (e) {
      this.clear();
      showProblem(this.problem, e);
    } finally {
      this.find.disabled = false;
    }
  }

  private row(order: Order): HTMLTableRowElement {
    const status = enumName(OrderStatus, order.status) || "UNSPECIFIED";
    const idCell = `order-${order.orderId}`;
    const action = cell("Action");
    if (order.status === OrderStatus.PAID) {
      const refund = h("button", { type: "button", class: "secondary", "aria-describedby": idCell }, "Refund");
      refund.addEventListener("click", () => void this.refund(order, refund));
      action.append(refund);
    }
    return h(
      "tr",
      { "data-order-id": order.orderId, "data-order-status": status },
      h("td", { "data-label": "Order", id: idCell, class: "code" }, order.orderId),
      cell("Status", h("span", { class: "order-status" }, words(status))),
      cell("Seats", String(order.tickets.length)),
      cell("Amount", order.amount ? money(order.amount.amountMinor, order.amount.currency) : "—"),
      cell("Created", dateTime(order.createdAt)),
      action,
    );
  }

  private async refund(order: Order, button: HTMLButtonElement): Promise<void> {
    const reason = h("input", { id: "refund-reason", type: "text", maxlength: 200 });
    const amount = order.amount ? money(order.amount.amountMinor, order.amount.currency) : "";
    const sure = await confirmInPage(this.confirmSlot, {
      id: "confirm-refund",
      question: `Refund order ${order.orderId}${amount ? ` (${amount})` : ""} of ${order.fanId}?`,
      detail: "Its tickets stop being valid and its seats go back on sale.",
      yes: "Refund the order",
      no: "Keep the order",
      extra: [h("div", { class: "field" }, h("label", { for: "refund-reason" }, "Reason (optional)"), reason)],
    });
    if (!sure) return;
    button.disabled = true;
    clearProblem(this.problem);
    this.message.textContent = "";
    try {
      const answer = await this.api.boxOffice.refundOrder({ orderId: order.orderId, reason: reason.value.trim() });
      const paid = answer.amount ? money(answer.amount.amountMinor, answer.amount.currency) : "";
      const text = answer.newlyRefunded
        ? `Order ${order.orderId} refunded.${paid ? ` ${paid} back.` : ""}`
        : `Order ${order.orderId} had already been refunded${paid ? ` (${paid})` : ""}.`;
      this.message.textContent = text;
      announce(text);
      const row = await this.settle(order);
      const status = row.querySelector<HTMLElement>(".order-status");
      status?.setAttribute("tabindex", "-1");
      status?.focus();
    } catch (e) {
      button.disabled = false;
      showProblem(this.problem, e);
      // The button had focus and was disabled meanwhile: focus goes to what happened.
      this.problem.tabIndex = -1;
      this.problem.focus();
    }
  }

  /**
   * Shows the order as payments has it after a refund, following it while the refund
   * is still under way at the provider (PENDING); the box office's word (REFUNDED)
   * when payments cannot be asked.
   */
  private async settle(order: Order): Promise<HTMLTableRowElement> {
    let shown: Order = { ...order, status: OrderStatus.REFUNDED } as Order;
    for (let attempt = 0; attempt < SETTLE_TRIES; attempt += 1) {
      const now = await this.api.payments
        .getOrder({ key: { case: "orderId", value: order.orderId } })
        .then((r) => r.order)
        .catch(() => undefined);
      if (!now) break;
      shown = now;
      if (now.status !== OrderStatus.PENDING) break;
      this.replace(now);
      await new Promise((r) => setTimeout(r, 1000));
    }
    return this.replace(shown);
  }

  /** Replaces the order's row with one for `order`. */
  private replace(order: Order): HTMLTableRowElement {
    const row = this.row(order);
    this.rows.querySelector(`tr[data-order-id="${CSS.escape(order.orderId)}"]`)?.replaceWith(row);
    return row;
  }
}

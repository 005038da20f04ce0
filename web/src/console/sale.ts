// Sale control: the event's state (`#sale-state`, its `data-sale-state` the status's
// enum name: DRAFT, PRESALE, ON_SALE, PAUSED, CLOSED, CANCELLED) and the buttons that
// start the presale, open, pause, resume and close the sale, each enabled only where
// the box office allows that transition; closing asks first, in the page.

import { EventStatus, type Event } from "../gen/stadium/box_office/v1/box_office_pb.js";
import { announce, h } from "../dom.js";
import type { StaffClients } from "./clients.js";
import { confirmInPage } from "./confirm.js";
import { enumName, words } from "./format.js";
import { clearProblem, showProblem } from "./problem.js";
import { pushNote } from "./push.js";

type Action = "presale" | "open" | "pause" | "resume" | "close";

/** The statuses each action starts from (the box office's transitions). */
const FROM: Record<Action, EventStatus[]> = {
  presale: [EventStatus.DRAFT],
  open: [EventStatus.DRAFT, EventStatus.PRESALE],
  pause: [EventStatus.ON_SALE, EventStatus.PRESALE],
  resume: [EventStatus.PAUSED],
  close: [EventStatus.DRAFT, EventStatus.PRESALE, EventStatus.ON_SALE, EventStatus.PAUSED],
};

/** What the console says once an action is done. */
const DONE: Record<Action, string> = {
  presale: "The presale has started: only presale codes and channel keys buy until the on-sale time.",
  open: "The sale is open.",
  pause: "The sale is paused.",
  resume: "The sale runs again.",
  close: "The sale is closed.",
};

const LABEL: Record<Action, string> = {
  presale: "Start presale",
  open: "Open sale",
  pause: "Pause sale",
  resume: "Resume sale",
  close: "Close sale",
};

export class SaleControl {
  /** `#sale-state`, for the event's heading. */
  readonly state: HTMLElement;
  readonly element: HTMLElement;
  private readonly buttons = new Map<Action, HTMLButtonElement>();
  private readonly message = h("div", { id: "sale-message", role: "status" });
  private readonly problem = h("div", { id: "sale-problem", role: "alert" });
  private readonly confirmSlot = h("div", {});
  private status = EventStatus.UNSPECIFIED;
  private busy = false;

  constructor(
    private readonly api: StaffClients,
    private readonly eventId: string,
    private readonly onEvent: (event: Event) => void,
  ) {
    this.state = h("p", { id: "sale-state", "data-sale-state": "UNSPECIFIED" });
    for (const action of Object.keys(LABEL) as Action[]) {
      const button = h("button", { type: "button", id: `sale-${action}`, class: action === "close" ? "danger" : undefined }, LABEL[action]);
      button.addEventListener("click", () => void this.act(action));
      this.buttons.set(action, button);
    }
    this.element = h(
      "section",
      { id: "sale", class: "card", "aria-labelledby": "sale-title" },
      h("h3", { id: "sale-title" }, "Sale"),
      h("div", { class: "actions" }, ...this.buttons.values()),
      this.confirmSlot,
      this.problem,
      this.message,
    );
  }

  /** Shows the event's status and enables the transitions it allows. */
  update(event: Event): void {
    const changed = event.status !== this.status && this.status !== EventStatus.UNSPECIFIED;
    this.status = event.status;
    const name = enumName(EventStatus, event.status) || "UNSPECIFIED";
    this.state.dataset["saleState"] = name;
    this.state.replaceChildren("Sale: ", h("strong", {}, words(name)));
    this.enable();
    if (changed) announce(`The sale is now ${words(name).toLowerCase()}.`);
  }

  private enable(): void {
    for (const [action, button] of this.buttons) {
      button.disabled = this.busy || !FROM[action].includes(this.status);
    }
  }

  private async act(action: Action): Promise<void> {
    if (action === "close") {
      const sure = await confirmInPage(this.confirmSlot, {
        id: "confirm-close",
        question: "Close the sale for good?",
        detail: "Queued fans are told the sale is closed; a closed sale cannot be opened again.",
        yes: "Yes, close the sale",
        no: "Keep the sale",
      });
      if (!sure) return;
    }
    this.busy = true;
    this.enable();
    clearProblem(this.problem);
    this.message.textContent = "";
    try {
      const request = { eventId: this.eventId };
      const answer =
        action === "presale"
          ? await this.api.boxOffice.startPresale(request)
          : action === "open"
            ? await this.api.boxOffice.openSale(request)
            : action === "pause"
              ? await this.api.boxOffice.pauseSale(request)
              : action === "resume"
                ? await this.api.boxOffice.resumeSale(request)
                : await this.api.boxOffice.closeSale(request);
      this.busy = false;
      if (answer.event) this.onEvent(answer.event);
      const done =
        action === "resume" && answer.event?.status === EventStatus.PRESALE ? "The presale runs again." : DONE[action];
      const text = `${done}${pushNote(answer.waitingRoom)}`;
      this.message.textContent = text;
      announce(text);
    } catch (e) {
      this.busy = false;
      showProblem(this.problem, e);
    } finally {
      this.enable();
    }
  }
}

// The admission rate and the active-fan cap, changed live: the box office stores them
// and tells the waiting room (SetAdmissionRate); the answer says whether it was told.

import type { Event } from "../gen/stadium/box_office/v1/box_office_pb.js";
import { announce, h } from "../dom.js";
import type { StaffClients } from "./clients.js";
import { count } from "./format.js";
import { clearProblem, showProblem } from "./problem.js";
import { pushNote } from "./push.js";

export class RateForm {
  readonly element: HTMLFormElement;
  private readonly rate = h("input", { id: "rate-fpm", name: "fans_per_minute", type: "number", min: 1, max: 1_000_000, step: 1, required: true, inputmode: "numeric" });
  private readonly cap = h("input", { id: "rate-cap", name: "active_fan_cap", type: "number", min: 0, max: 2_147_483_647, step: 1, required: true, inputmode: "numeric" });
  private readonly apply = h("button", { type: "submit", id: "rate-apply" }, "Apply");
  private readonly current = h("p", { id: "rate-current", class: "muted" });
  private readonly message = h("div", { id: "rate-message", role: "status" });
  private readonly problem = h("div", { id: "rate-problem", role: "alert" });
  private prefilled = false;

  constructor(
    private readonly api: StaffClients,
    private readonly eventId: string,
    private readonly onEvent: (event: Event) => void,
  ) {
    this.element = h(
      "form",
      { id: "rate", class: "card", "aria-labelledby": "rate-title" },
      h("h3", { id: "rate-title" }, "Admission"),
      this.current,
      h("div", { class: "field" }, h("label", { for: "rate-fpm" }, "Admission rate (fans per minute)"), this.rate),
      h("div", { class: "field" }, h("label", { for: "rate-cap" }, "Active-fan cap (0 = none)"), this.cap),
      this.apply,
      this.problem,
      this.message,
    );
    this.element.addEventListener("submit", (e) => {
      e.preventDefault();
      void this.submit();
    });
  }

  /** Shows the event's settings; fills the fields the first time (never over an edit). */
  update(event: Event): void {
    const rate = event.settings?.admissionRatePerMin ?? 0;
    const cap = event.settings?.activeFanCap ?? 0;
    this.current.textContent = `Now: ${count(rate)} fans per minute, ${cap === 0 ? "no cap" : `at most ${count(cap)} active fans`}.`;
    if (!this.prefilled) {
      this.rate.value = String(rate);
      this.cap.value = String(cap);
      this.prefilled = true;
    }
  }

  private async submit(): Promise<void> {
    const fansPerMinute = Number(this.rate.value);
    const activeFanCap = Number(this.cap.value);
    if (!Number.isInteger(fansPerMinute) || !Number.isInteger(activeFanCap)) return;
    this.apply.disabled = true;
    clearProblem(this.problem);
    this.message.textContent = "";
    try {
      const answer = await this.api.boxOffice.setAdmissionRate({ eventId: this.eventId, fansPerMinute, activeFanCap });
      if (answer.event) this.onEvent(answer.event);
      const text =
        `Admission set to ${count(fansPerMinute)} fans per minute, ` +
        `${activeFanCap === 0 ? "no cap" : `at most ${count(activeFanCap)} active fans`}.${pushNote(answer.waitingRoom)}`;
      this.message.textContent = text;
      announce(text);
    } catch (e) {
      showProblem(this.problem, e);
    } finally {
      this.apply.disabled = false;
    }
  }
}

// The admission rate and the active-fan cap, changed live: the box office stores them
// and tells the waiting room (SetAdmissionRate); the answer says whether it was told.
// The page checks both fields first (whole numbers in range, each error naming its
// field); the form is disabled, saying why, once the sale is closed or cancelled.

import { EventStatus, type Event } from "../gen/stadium/box_office/v1/box_office_pb.js";
import { announce, h } from "../dom.js";
import type { StaffClients } from "./clients.js";
import { count } from "./format.js";
import { clearProblem, showProblem } from "./problem.js";
import { pushNote } from "./push.js";

/** A number field of the form, its range and how its errors name it. */
interface Field {
  input: HTMLInputElement;
  error: HTMLElement;
  name: string;
  min: number;
  max: number;
}

function field(id: string, name: string, min: number, max: number): Field {
  const error = h("p", { id: `${id}-error`, class: "field-error" });
  const input = h("input", {
    id,
    name: id === "rate-fpm" ? "fans_per_minute" : "active_fan_cap",
    type: "number",
    min,
    max,
    step: 1,
    required: true,
    inputmode: "numeric",
    "aria-describedby": `${id}-error`,
  });
  return { input, error, name, min, max };
}

/** The field's whole number, or the words saying what is wrong with it. */
function check(f: Field): number | string {
  const raw = f.input.value.trim();
  const value = Number(raw);
  if (raw === "" && !f.input.validity.badInput) return `Enter ${f.name.toLowerCase()}.`;
  if (raw === "" || !Number.isInteger(value) || value < f.min || value > f.max) {
    return `${f.name} must be a whole number from ${count(f.min)} to ${count(f.max)}.`;
  }
  return value;
}

/** Why the form is off, for a status that takes no more admission changes; "" otherwise. */
function closedNote(status: EventStatus): string {
  if (status === EventStatus.CLOSED) return "The sale is closed: the admission rate and cap can no longer change.";
  if (status === EventStatus.CANCELLED) return "The event is cancelled: the admission rate and cap can no longer change.";
  return "";
}

export class RateForm {
  readonly element: HTMLFormElement;
  private readonly rate = field("rate-fpm", "The admission rate (fans per minute)", 1, 1_000_000);
  private readonly cap = field("rate-cap", "The active-fan cap", 0, 2_147_483_647);
  private readonly apply = h("button", { type: "submit", id: "rate-apply" }, "Apply");
  private readonly current = h("p", { id: "rate-current", class: "muted" });
  private readonly closed = h("p", { id: "rate-closed", class: "muted", hidden: true });
  private readonly message = h("div", { id: "rate-message", role: "status" });
  private readonly problem = h("div", { id: "rate-problem", role: "alert" });
  private prefilled = false;
  private off = false;
  private busy = false;

  constructor(
    private readonly api: StaffClients,
    private readonly eventId: string,
    private readonly onEvent: (event: Event) => void,
  ) {
    this.element = h(
      "form",
      { id: "rate", class: "card", "aria-labelledby": "rate-title", novalidate: true },
      h("h3", { id: "rate-title" }, "Admission"),
      this.current,
      this.closed,
      h("div", { class: "field" }, h("label", { for: "rate-fpm" }, "Admission rate (fans per minute)"), this.rate.input, this.rate.error),
      h("div", { class: "field" }, h("label", { for: "rate-cap" }, "Active-fan cap (0 = none)"), this.cap.input, this.cap.error),
      this.apply,
      this.problem,
      this.message,
    );
    this.element.addEventListener("submit", (e) => {
      e.preventDefault();
      void this.submit();
    });
    // An edit makes the last answer old news, and the edited field's error too.
    for (const f of [this.rate, this.cap]) {
      f.input.addEventListener("input", () => {
        this.message.textContent = "";
        this.invalid(f, "");
      });
    }
  }

  /** Shows the event's settings; fills the fields the first time (never over an edit). */
  update(event: Event): void {
    const rate = event.settings?.admissionRatePerMin ?? 0;
    const cap = event.settings?.activeFanCap ?? 0;
    this.current.textContent = `Now: ${count(rate)} fans per minute, ${cap === 0 ? "no cap" : `at most ${count(cap)} active fans`}.`;
    if (!this.prefilled) {
      this.rate.input.value = String(rate);
      this.cap.input.value = String(cap);
      this.prefilled = true;
    }
    const note = closedNote(event.status);
    this.off = note !== "";
    this.closed.textContent = note;
    this.closed.hidden = !this.off;
    this.enable();
  }

  private enable(): void {
    this.rate.input.disabled = this.off;
    this.cap.input.disabled = this.off;
    this.apply.disabled = this.off || this.busy;
  }

  /** Marks `f` invalid with `text`, or valid again with "". */
  private invalid(f: Field, text: string): void {
    f.error.textContent = text;
    if (text) f.input.setAttribute("aria-invalid", "true");
    else f.input.removeAttribute("aria-invalid");
  }

  private async submit(): Promise<void> {
    if (this.off || this.busy) return;
    clearProblem(this.problem);
    this.message.textContent = "";
    const fansPerMinute = check(this.rate);
    const activeFanCap = check(this.cap);
    this.invalid(this.rate, typeof fansPerMinute === "string" ? fansPerMinute : "");
    this.invalid(this.cap, typeof activeFanCap === "string" ? activeFanCap : "");
    if (typeof fansPerMinute === "string" || typeof activeFanCap === "string") {
      // Focus on the field reads its error; a field already focused (Enter) hears it.
      const wrong = typeof fansPerMinute === "string" ? this.rate : this.cap;
      if (document.activeElement === wrong.input) announce(wrong.error.textContent ?? "");
      else wrong.input.focus();
      return;
    }
    this.busy = true;
    this.enable();
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
      this.busy = false;
      this.enable();
    }
  }
}

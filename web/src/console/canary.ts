// The invariant canary: the box office's CheckInvariants for the event (a heavy query,
// so every 5 s, not every second), shown as OK or the violations with their rows, on
// `#canary` with `data-canary` = "ok", "violated" or "unknown" (not checked, or the
// check failed). Its calls have the console's usual deadline, not the dashboard's.

import type { CheckInvariantsResponse } from "../gen/stadium/box_office/v1/box_office_pb.js";
import { announce, h } from "../dom.js";
import type { StaffClients } from "./clients.js";
import { ms } from "./format.js";
import { Panel } from "./panel.js";

/** How often the canary runs. */
export const CANARY_PERIOD_MS = 5000;

export class CanaryPanel {
  readonly panel = new Panel("canary-panel", "Invariant canary", "Checked at");
  private readonly state = h("p", { id: "canary", class: "big", "data-canary": "unknown" }, "Not checked yet");
  private readonly violations = h("ul", { id: "canary-violations", class: "violations" });

  constructor(
    private readonly api: StaffClients,
    private readonly eventId: string,
  ) {
    this.panel.body.append(this.state, this.violations);
  }

  /** Runs the invariant queries and shows the outcome. */
  refresh(): Promise<void> {
    return this.panel.refresh(async () => {
      try {
        return this.show(await this.api.boxOffice.checkInvariants({ eventId: this.eventId }));
      } catch (e) {
        this.set("unknown", "Unknown: the check failed");
        throw e;
      }
    });
  }

  private set(canary: "ok" | "violated" | "unknown", text: string): void {
    const was = this.state.dataset["canary"];
    this.state.dataset["canary"] = canary;
    this.state.textContent = text;
    if (was !== canary && canary === "violated") announce(`Invariant canary: ${text}.`);
  }

  /** Shows the outcome; returns when it was checked. */
  private show(answer: CheckInvariantsResponse): number {
    const n = answer.violations.length;
    this.set(n === 0 ? "ok" : "violated", n === 0 ? "OK" : `${n} invariant${n === 1 ? "" : "s"} violated`);
    this.violations.replaceChildren(
      ...answer.violations.map((v) =>
        h(
          "li",
          { "data-invariant": v.invariant },
          h("strong", {}, v.invariant),
          ` — ${v.description}`,
          v.rows.length > 0 ? h("pre", { class: "rows" }, v.rows.slice(0, 20).join("\n")) : null,
          v.rows.length > 20 ? h("p", { class: "muted" }, `and ${v.rows.length - 20} more rows`) : null,
        ),
      ),
    );
    return ms(answer.checkedAt) ?? Date.now();
  }
}

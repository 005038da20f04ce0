// A dashboard panel: a titled card with its own error slot and its own "as of" line,
// so a panel whose call fails or times out says so, and that what it still shows is
// stale, without breaking the others.

import { h } from "../dom.js";
import { clock } from "./format.js";
import { clearProblem, showProblem } from "./problem.js";

export class Panel {
  readonly element: HTMLElement;
  readonly body: HTMLElement;
  private readonly problem: HTMLElement;
  /** `#<id>-as-of`: when the panel's data was read; `data-stale` once a refresh failed. */
  private readonly asOf: HTMLElement;
  private last: number | null = null;

  /** A panel `id` headed `title`, its content in `body`; `asOfLabel` heads its time ("As of"). */
  constructor(
    id: string,
    title: string,
    private readonly asOfLabel = "As of",
  ) {
    this.problem = h("div", { id: `${id}-problem`, role: "alert" });
    this.body = h("div", { class: "panel-body" });
    this.asOf = h("p", { id: `${id}-as-of`, class: "muted as-of" });
    this.element = h(
      "section",
      { id, class: "card panel", "aria-labelledby": `${id}-title` },
      h("h3", { id: `${id}-title` }, title),
      this.problem,
      this.body,
      this.asOf,
    );
  }

  /**
   * Runs `work`, which resolves to when its data is as of (ms since the epoch; now when
   * it does not say); shows its failure in the panel and marks the data stale, or
   * clears the last failure. Never rejects.
   */
  async refresh(work: () => Promise<number | void>): Promise<void> {
    try {
      const at = await work();
      this.last = typeof at === "number" ? at : Date.now();
      clearProblem(this.problem);
      delete this.asOf.dataset["stale"];
      this.asOf.textContent = `${this.asOfLabel} ${clock(this.last)}`;
    } catch (e) {
      showProblem(this.problem, e);
      this.asOf.dataset["stale"] = "true";
      this.asOf.textContent =
        this.last === null
          ? "Not read yet: the last refresh failed."
          : `${this.asOfLabel} ${clock(this.last)}: stale, the last refresh failed.`;
    }
  }

  /** Nothing to read for now (e.g. no queue before the sale opens): no problem, no time. */
  idle(): void {
    clearProblem(this.problem);
    delete this.asOf.dataset["stale"];
    this.asOf.textContent = "";
  }
}

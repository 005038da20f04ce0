// A dashboard panel: a titled card with its own error slot, so a panel whose call
// fails says so without breaking the others.

import { h } from "../dom.js";
import { clearProblem, showProblem } from "./problem.js";

export class Panel {
  readonly element: HTMLElement;
  readonly body: HTMLElement;
  private readonly problem: HTMLElement;

  /** A panel `id` headed `title`, its content in `body`. */
  constructor(id: string, title: string) {
    this.problem = h("div", { id: `${id}-problem`, role: "alert" });
    this.body = h("div", { class: "panel-body" });
    this.element = h(
      "section",
      { id, class: "card panel", "aria-labelledby": `${id}-title` },
      h("h3", { id: `${id}-title` }, title),
      this.problem,
      this.body,
    );
  }

  /** Runs `work`; shows its failure in the panel, or clears the last one. */
  async refresh(work: () => Promise<void>): Promise<void> {
    try {
      await work();
      clearProblem(this.problem);
    } catch (e) {
      showProblem(this.problem, e);
    }
  }
}

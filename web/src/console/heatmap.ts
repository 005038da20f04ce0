// Seats per section (the box office's GetSalesReport, by section): the event's totals,
// and a heat map with one cell per section coloured by its sold fraction, its sold /
// held / free as text and in the cell's aria-label; a grid that reflows to the width.

import type { GetSalesReportResponse, ReportRow } from "../gen/stadium/box_office/v1/box_office_pb.js";
import { h } from "../dom.js";
import { count, percent } from "./format.js";
import { Panel } from "./panel.js";

/** The cell colour for a sold fraction: light (nothing sold) to dark (all sold). */
export function heat(fraction: number): { background: string; dark: boolean } {
  const f = Math.min(1, Math.max(0, fraction));
  const lightness = Math.round(96 - f * 68);
  return { background: `hsl(214 65% ${lightness}%)`, dark: lightness < 55 };
}


function cell(row: ReportRow): HTMLElement {
  const seats = Math.max(row.seats, 1);
  const fraction = row.sold / seats;
  const { background, dark } = heat(fraction);
  const label =
    `Section ${row.key}: ${count(row.sold)} sold, ${count(row.held)} held, ${count(row.available)} free` +
    `${row.blocked > 0 ? `, ${count(row.blocked)} blocked` : ""} of ${count(row.seats)} seats (${percent(fraction)} sold)`;
  const share = (n: number) => `${((n / seats) * 100).toFixed(2)}%`;
  return h(
    "li",
    {
      class: `heat-cell${dark ? " dark" : ""}`,
      style: `background:${background}`,
      "data-section": row.key,
      "aria-label": label,
    },
    h("span", { class: "heat-name", "aria-hidden": "true" }, row.key),
    h(
      "span",
      { class: "heat-counts", "aria-hidden": "true" },
      `${count(row.sold)} sold · ${count(row.held)} held · ${count(row.available)} free`,
    ),
    h(
      "span",
      { class: "heat-bar", "aria-hidden": "true" },
      h("span", { class: "bar-sold", style: `width:${share(row.sold)}` }),
      h("span", { class: "bar-held", style: `width:${share(row.held)}` }),
    ),
  );
}

export class HeatMapPanel {
  readonly panel = new Panel("sections", "Sections: sold, held, free");
  private readonly free = h("dd", { id: "total-free" }, "…");
  private readonly held = h("dd", { id: "total-held" }, "…");
  private readonly sold = h("dd", { id: "total-sold" }, "…");
  private readonly blocked = h("dd", { id: "total-blocked" }, "…");
  private readonly grid = h("ul", { id: "heatmap", class: "heatmap", "aria-label": "Sections, coloured by the share of their seats sold" });

  constructor() {
    const legend = h(
      "p",
      { class: "heat-legend muted", "aria-hidden": "true" },
      "0 % sold ",
      h("span", { class: "heat-scale" }),
      " 100 % sold",
    );
    this.panel.body.append(
      h(
        "dl",
        { class: "facts totals" },
        h("dt", {}, "Free"), this.free,
        h("dt", {}, "Held"), this.held,
        h("dt", {}, "Sold"), this.sold,
        h("dt", {}, "Blocked"), this.blocked,
      ),
      legend,
      this.grid,
    );
  }

  /** Shows the report's totals and one cell per section. */
  show(report: GetSalesReportResponse): void {
    const t = report.total;
    this.free.textContent = t ? count(t.available) : "—";
    this.held.textContent = t ? count(t.held) : "—";
    this.sold.textContent = t ? count(t.sold) : "—";
    this.blocked.textContent = t ? count(t.blocked) : "—";
    this.grid.replaceChildren(...report.rows.map(cell));
  }
}

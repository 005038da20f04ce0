// The SEAT_TAKEN rate: the share of claims refused because the seats were taken, over
// the last minute (the box office's TopSections), weighted by each section's claims per
// second; and the busiest sections in a small table. Without claims in the window,
// only a sentence saying so.

import type { SectionLoad, TopSectionsResponse } from "../gen/stadium/box_office/v1/box_office_pb.js";
import { h } from "../dom.js";
import { READ_TIMEOUT_MS, type StaffClients } from "./clients.js";
import { oneDecimal, percent } from "./format.js";
import { Panel } from "./panel.js";

const WINDOW_S = 60;
const SHOWN = 5;

/** The SEAT_TAKEN share of all claims, each section weighted by its claims per second; null without claims. */
export function seatTakenRate(sections: SectionLoad[]): { rate: number | null; claimsPerS: number } {
  let claims = 0;
  let taken = 0;
  for (const s of sections) {
    claims += s.claimsPerS;
    taken += s.claimsPerS * s.seatTakenRate;
  }
  return { rate: claims > 0 ? taken / claims : null, claimsPerS: claims };
}

/** Claims per second with one decimal; "< 0.1" for a few claims, not "0.0". */
function perSecond(value: number): string {
  return value > 0 && value < 0.05 ? "< 0.1" : oneDecimal(value);
}

export class SeatTakenPanel {
  readonly panel = new Panel("seat-taken", "SEAT_TAKEN rate");
  private readonly rate = h("span", { id: "seat-taken-rate" }, "…");
  private readonly rateLine = h("p", { class: "big" }, this.rate, h("span", { class: "muted" }, " of claims"));
  private readonly note = h("p", { id: "seat-taken-note", class: "muted" });
  private readonly rows = h("tbody", {});
  private readonly table = h(
    "table",
    { id: "top-sections", class: "compact", hidden: true },
    h("caption", { class: "visually-hidden" }, "Busiest sections over the last minute"),
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        h("th", { scope: "col" }, "Section"),
        h("th", { scope: "col" }, "Claims/s"),
        h("th", { scope: "col" }, "SEAT_TAKEN"),
        h("th", { scope: "col" }, "p99 ms"),
      ),
    ),
    this.rows,
  );

  constructor(
    private readonly api: StaffClients,
    private readonly eventId: string,
  ) {
    this.panel.body.append(this.rateLine, this.note, this.table);
  }

  /** Reads the sections' load over the last minute and shows it. */
  refresh(): Promise<void> {
    return this.panel.refresh(async () => {
      this.show(await this.api.boxOffice.topSections({ eventId: this.eventId, windowS: WINDOW_S }, { timeoutMs: READ_TIMEOUT_MS }));
    });
  }

  private show(top: TopSectionsResponse): void {
    const { rate, claimsPerS } = seatTakenRate(top.sections);
    const windowS = top.windowS || WINDOW_S;
    const busiest = top.sections.filter((s) => s.claimsPerS > 0).slice(0, SHOWN);
    this.rate.textContent = rate === null ? "—" : percent(rate);
    this.rateLine.hidden = rate === null;
    this.note.textContent =
      rate === null
        ? `No claims in the last ${windowS} s.`
        : `Over the last ${windowS} s, ${perSecond(claimsPerS)} claims per second.`;
    this.table.hidden = busiest.length === 0;
    this.rows.replaceChildren(
      ...busiest.map((s) =>
        h(
          "tr",
          { "data-section": s.sectionCode },
          h("th", { scope: "row" }, s.sectionCode),
          h("td", {}, perSecond(s.claimsPerS)),
          h("td", {}, percent(s.seatTakenRate)),
          h("td", {}, String(Math.round(s.p99Ms))),
        ),
      ),
    );
  }
}

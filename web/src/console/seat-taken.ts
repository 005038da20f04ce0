// The SEAT_TAKEN rate: the share of claims refused because the seats were taken, over
// the last minute (the box office's TopSections), weighted by each section's claims per
// second; and the busiest sections in a small table.

import type { SectionLoad, TopSectionsResponse } from "../gen/stadium/box_office/v1/box_office_pb.js";
import { h } from "../dom.js";
import type { StaffClients } from "./clients.js";
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

export class SeatTakenPanel {
  readonly panel = new Panel("seat-taken", "SEAT_TAKEN rate");
  private readonly rate = h("span", { id: "seat-taken-rate" }, "…");
  private readonly note = h("p", { class: "muted" });
  private readonly rows = h("tbody", {});

  constructor(
    private readonly api: StaffClients,
    private readonly eventId: string,
  ) {
    this.panel.body.append(
      h("p", { class: "big" }, this.rate, h("span", { class: "muted" }, " of claims")),
      this.note,
      h(
        "table",
        { id: "top-sections", class: "compact" },
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
      ),
    );
  }

  /** Reads the sections' load over the last minute and shows it. */
  refresh(): Promise<void> {
    return this.panel.refresh(async () => {
      this.show(await this.api.boxOffice.topSections({ eventId: this.eventId, windowS: WINDOW_S }));
    });
  }

  private show(top: TopSectionsResponse): void {
    const { rate, claimsPerS } = seatTakenRate(top.sections);
    this.rate.textContent = rate === null ? "—" : percent(rate);
    this.note.textContent =
      rate === null
        ? `No claims in the last ${top.windowS || WINDOW_S} s.`
        : `Over the last ${top.windowS || WINDOW_S} s, ${oneDecimal(claimsPerS)} claims per second.`;
    this.rows.replaceChildren(
      ...top.sections.slice(0, SHOWN).map((s) =>
        h(
          "tr",
          { "data-section": s.sectionCode },
          h("th", { scope: "row" }, s.sectionCode),
          h("td", {}, oneDecimal(s.claimsPerS)),
          h("td", {}, percent(s.seatTakenRate)),
          h("td", {}, String(Math.round(s.p99Ms))),
        ),
      ),
    );
  }
}

// The venue as data: seats by id with their section, row and category, and which
// seats are free according to the availability bitmaps (seat_map.proto).

import type { Layout, GetAvailabilityResponse } from "./gen/stadium/seat_map/v1/seat_map_pb.js";

/** Distinct colours (readable on white, apart for common colour blindness). */
const PALETTE = ["#1f77b4", "#d95f02", "#7570b3", "#1b9e77", "#e7298a", "#66a61e", "#a6761d", "#e6ab02"];

/** One seat with what the page shows about it. */
export interface SeatInfo {
  id: bigint;
  sectionId: bigint;
  sectionCode: string;
  row: string;
  label: string;
  category: string;
  x: number;
  y: number;
  accessible: boolean;
}

/** The layout indexed by seat id. */
export class Venue {
  readonly seats = new Map<string, SeatInfo>();
  readonly colors = new Map<string, string>();

  constructor(readonly layout: Layout) {
    // The plan's colours, unless they do not tell the categories apart.
    const given = new Set(layout.categories.map((c) => c.color.toLowerCase()).filter((c) => c !== ""));
    const ownColours = given.size === layout.categories.length;
    layout.categories.forEach((c, i) => {
      this.colors.set(c.code, ownColours ? c.color : PALETTE[i % PALETTE.length]!);
    });
    let sectionIndex = 0;
    for (const section of layout.sections) {
      let rowIndex = 0;
      for (const row of section.rows) {
        let seatIndex = 0;
        for (const seat of row.seats) {
          // A plan without coordinates still draws: sections side by side, rows down.
          const x = seat.position ? seat.position.x : sectionIndex * 40 + seatIndex;
          const y = seat.position ? seat.position.y : rowIndex;
          this.seats.set(seat.seatId.toString(), {
            id: seat.seatId,
            sectionId: section.sectionId,
            sectionCode: section.code || section.name,
            row: row.label,
            label: seat.label,
            category: seat.categoryCode,
            x,
            y,
            accessible: seat.accessible,
          });
          seatIndex += 1;
        }
        rowIndex += 1;
      }
      sectionIndex += 1;
    }
  }

  /** "Section S1, row 2, seat 7". */
  describe(id: bigint): string {
    const seat = this.seats.get(id.toString());
    return seat ? `Section ${seat.sectionCode}, row ${seat.row}, seat ${seat.label}` : `Seat ${id}`;
  }
}

/** Seat ids (as strings) free in `availability`, and the oldest `as_of` among sections. */
export function freeSeats(availability: GetAvailabilityResponse): { free: Set<string>; asOf: Date | null } {
  const free = new Set<string>();
  let asOf: Date | null = null;
  for (const section of availability.sections) {
    const bitmap = section.availableBitmap;
    for (let i = 0; i < section.seatCount; i += 1) {
      const byte = bitmap[i >> 3] ?? 0;
      if ((byte >> (i & 7)) & 1) free.add((section.firstSeatId + BigInt(i)).toString());
    }
    if (section.asOf) {
      const at = new Date(Number(section.asOf.seconds) * 1000 + Math.floor(section.asOf.nanos / 1e6));
      if (!asOf || at < asOf) asOf = at;
    }
  }
  return { free, asOf };
}

// Holds and sales over time: an inline SVG line chart of the held and sold seats over
// the last five minutes, with labelled axes, role="img" and an aria-label with the
// latest values. The sold seats start from the box office's history
// (GetSalesTimeline, read once when the event is opened) and go on with the totals the
// console samples (GetSalesReport, once a second); held seats have no history, so
// their line starts when the page opened, and the chart says so.

import type { GetSalesTimelineResponse } from "../gen/stadium/box_office/v1/box_office_pb.js";
import { h } from "../dom.js";
import type { StaffClients } from "./clients.js";
import { clock, count, ms } from "./format.js";
import { Panel } from "./panel.js";
import { describe } from "./problem.js";

const SVG = "http://www.w3.org/2000/svg";
const SPAN_MS = 5 * 60 * 1000;
const W = 400;
const H = 200;
const LEFT = 46;
const RIGHT = 10;
const TOP = 10;
const BOTTOM = 36;

/** The width of the history's buckets. */
const BUCKET_MS = 5000;

interface Sample {
  at: number;
  held: number;
  sold: number;
}

/** A point of the sold seats' history. */
export interface Sold {
  at: number;
  sold: number;
}

/**
 * The seats sold over `[from, to]` (ms since the epoch) from the timeline's buckets of
 * `bucketMs`: the running sum of tickets sold less those refunded, counted from the
 * first bucket, rising across each bucket of the window and flat between them.
 */
export function soldHistory(timeline: GetSalesTimelineResponse, bucketMs: number, from: number, to: number): Sold[] {
  const buckets = timeline.points
    .map((p) => ({ start: ms(p.bucketStart), net: p.sold - p.refunded }))
    .filter((b): b is { start: number; net: number } => b.start !== null)
    .sort((a, b) => a.start - b.start);
  const points: Sold[] = [];
  let total = 0;
  for (const b of buckets) {
    const before = total;
    total += b.net;
    if (b.start + bucketMs <= from || b.start >= to) continue;
    if (points.length === 0) points.push({ at: from, sold: before });
    points.push({ at: Math.max(b.start, from), sold: before }, { at: Math.min(b.start + bucketMs, to), sold: total });
  }
  if (points.length === 0) points.push({ at: from, sold: total });
  points.push({ at: to, sold: total });
  return points;
}

/** The smallest of 1, 2, 5 × 10^k at or above `v` (a round top for the axis). */
export function roundUp(v: number): number {
  if (v <= 1) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

function el(tag: string, attrs: Record<string, string | number>, text?: string): SVGElement {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

export class ChartPanel {
  readonly panel = new Panel("trend", "Holds and sales over time");
  /** The sold seats before the first sample, from the box office's history. */
  private history: Sold[] = [];
  /** What the console sampled itself. */
  private samples: Sample[] = [];
  /** When the console's first sample was taken. */
  private started: number | null = null;
  private readonly svg = document.createElementNS(SVG, "svg");
  private readonly soldNow = h("strong", { id: "trend-sold" }, "…");
  private readonly heldNow = h("strong", { id: "trend-held" }, "…");
  private readonly note = h("p", { id: "trend-note", class: "muted" }, "Sold seats: reading the sales history…");

  constructor(
    private readonly api: StaffClients,
    private readonly eventId: string,
  ) {
    this.svg.setAttribute("id", "trend-chart");
    this.svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
    this.svg.setAttribute("role", "img");
    this.svg.setAttribute("aria-label", "Holds and sales over time: no samples yet.");
    this.panel.body.append(
      h("div", { class: "chart-frame" }, this.svg),
      h(
        "ul",
        { class: "legend", "aria-hidden": "true" },
        h("li", {}, h("span", { class: "swatch line-sold" }), "Sold seats: ", this.soldNow),
        h("li", {}, h("span", { class: "swatch line-held" }), "Held seats (since this page opened): ", this.heldNow),
      ),
      this.note,
    );
    this.render();
  }

  /** Reads the sold seats of the last five minutes from the box office's history. */
  async loadHistory(): Promise<void> {
    try {
      const timeline = await this.api.boxOffice.getSalesTimeline({ eventId: this.eventId, bucketMs: BigInt(BUCKET_MS) });
      const to = Date.now();
      this.history = soldHistory(timeline, BUCKET_MS, to - SPAN_MS, to);
      this.note.textContent =
        "Sold seats from the box office's sales history, then as sampled here; " +
        "held seats have no history: they are sampled from when this page opened.";
      this.render();
    } catch (e) {
      this.note.textContent = `The sales history could not be read (${describe(e).text}): both lines start when this page opened.`;
    }
  }

  /** Adds the held and sold seats counted at `at` (ms since the epoch) and redraws. */
  add(at: number, held: number, sold: number): void {
    const last = this.samples[this.samples.length - 1];
    if (last && at < last.at) this.samples = [];
    if (this.samples.length === 0) this.started = at;
    this.samples.push({ at, held, sold });
    while (this.samples.length > 0 && this.samples[0]!.at < at - SPAN_MS) this.samples.shift();
    this.trimHistory(at - SPAN_MS);
    this.render();
  }

  /** Drops the history before `from`, the line still starting at `from` (interpolated). */
  private trimHistory(from: number): void {
    while (this.history.length > 1 && this.history[1]!.at <= from) this.history.shift();
    const [a, b] = this.history;
    if (!a || a.at >= from) return;
    if (!b) {
      this.history = [];
      return;
    }
    this.history[0] = { at: from, sold: a.sold + ((b.sold - a.sold) * (from - a.at)) / (b.at - a.at) };
  }

  /** The sold seats to draw: the history up to the first sample, then the samples. */
  private sold(): Sold[] {
    const first = this.samples[0]?.at ?? Infinity;
    return [...this.history.filter((p) => p.at < first), ...this.samples];
  }

  private render(): void {
    const plotW = W - LEFT - RIGHT;
    const plotH = H - TOP - BOTTOM;
    const sold = this.sold();
    const end = sold[sold.length - 1]?.at ?? 0;
    const top = roundUp(Math.max(1, ...sold.map((s) => s.sold), ...this.samples.map((s) => s.held)));
    const x = (at: number) => LEFT + ((at - (end - SPAN_MS)) / SPAN_MS) * plotW;
    const y = (v: number) => TOP + plotH - (v / top) * plotH;
    const parts: SVGElement[] = [];
    for (const v of [0, top / 2, top]) {
      parts.push(el("line", { x1: LEFT, x2: W - RIGHT, y1: y(v), y2: y(v), class: "grid" }));
      parts.push(el("text", { x: LEFT - 4, y: y(v) + 4, "text-anchor": "end", class: "tick" }, count(v)));
    }
    for (let m = 5; m >= 0; m -= 1) {
      const at = LEFT + ((5 - m) / 5) * plotW;
      parts.push(el("line", { x1: at, x2: at, y1: TOP + plotH, y2: TOP + plotH + 4, class: "axis" }));
      parts.push(el("text", { x: at, y: TOP + plotH + 15, "text-anchor": "middle", class: "tick" }, m === 0 ? "now" : `−${m} min`));
    }
    parts.push(el("line", { x1: LEFT, x2: LEFT, y1: TOP, y2: TOP + plotH, class: "axis" }));
    parts.push(el("line", { x1: LEFT, x2: W - RIGHT, y1: TOP + plotH, y2: TOP + plotH, class: "axis" }));
    parts.push(el("text", { x: LEFT + plotW / 2, y: H - 4, "text-anchor": "middle", class: "axis-title" }, "Time (last 5 minutes)"));
    parts.push(
      el("text", { x: 12, y: TOP + plotH / 2, "text-anchor": "middle", class: "axis-title", transform: `rotate(-90 12 ${TOP + plotH / 2})` }, "Seats"),
    );
    const line = (points: { at: number; value: number }[]) =>
      points.map((p) => `${x(p.at).toFixed(1)},${y(p.value).toFixed(1)}`).join(" ");
    if (sold.length > 0) {
      parts.push(el("polyline", { points: line(sold.map((s) => ({ at: s.at, value: s.sold }))), class: "line-sold" }));
    }
    if (this.samples.length > 0) {
      parts.push(el("polyline", { points: line(this.samples.map((s) => ({ at: s.at, value: s.held }))), class: "line-held" }));
    }
    this.svg.replaceChildren(...parts);
    this.svg.setAttribute("aria-label", this.summary(sold));
    const last = this.samples[this.samples.length - 1];
    this.soldNow.textContent = last ? count(last.sold) : "…";
    this.heldNow.textContent = last ? count(last.held) : "…";
  }

  private summary(sold: Sold[]): string {
    const first = sold[0];
    const last = this.samples[this.samples.length - 1];
    if (!first || !last) return "Holds and sales over time: no samples yet.";
    const more = Math.round(last.sold - first.sold);
    const heldFrom = this.started !== null && this.started > first.at ? ` Held seats only since ${clock(this.started)}, when this page opened.` : "";
    return (
      `Holds and sales over time. As of ${clock(last.at)}: ${count(last.held)} seats held, ${count(last.sold)} sold; ` +
      `${more >= 0 ? `${count(more)} more sold` : `${count(-more)} fewer sold`} since ${clock(first.at)}.${heldFrom}`
    );
  }
}

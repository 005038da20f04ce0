// Holds and sales over time: an inline SVG line chart of the held and sold seats the
// console sampled itself (GetSalesReport's totals, once a second) over the last five
// minutes, with labelled axes, role="img" and an aria-label with the latest values.

import { h } from "../dom.js";
import { clock, count } from "./format.js";
import { Panel } from "./panel.js";

const SVG = "http://www.w3.org/2000/svg";
const SPAN_MS = 5 * 60 * 1000;
const W = 400;
const H = 200;
const LEFT = 46;
const RIGHT = 10;
const TOP = 10;
const BOTTOM = 36;

interface Sample {
  at: number;
  held: number;
  sold: number;
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
  private samples: Sample[] = [];
  private readonly svg = document.createElementNS(SVG, "svg");
  private readonly soldNow = h("strong", { id: "trend-sold" }, "…");
  private readonly heldNow = h("strong", { id: "trend-held" }, "…");

  constructor() {
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
        h("li", {}, h("span", { class: "swatch line-held" }), "Held seats: ", this.heldNow),
      ),
    );
    this.render();
  }

  /** Adds the held and sold seats counted at `at` (ms since the epoch) and redraws. */
  add(at: number, held: number, sold: number): void {
    const last = this.samples[this.samples.length - 1];
    if (last && at < last.at) this.samples = [];
    this.samples.push({ at, held, sold });
    while (this.samples.length > 0 && this.samples[0]!.at < at - SPAN_MS) this.samples.shift();
    this.render();
  }

  private render(): void {
    const plotW = W - LEFT - RIGHT;
    const plotH = H - TOP - BOTTOM;
    const end = this.samples[this.samples.length - 1]?.at ?? 0;
    const top = roundUp(Math.max(1, ...this.samples.map((s) => Math.max(s.held, s.sold))));
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
    if (this.samples.length > 0) {
      const line = (pick: (s: Sample) => number) => this.samples.map((s) => `${x(s.at).toFixed(1)},${y(pick(s)).toFixed(1)}`).join(" ");
      parts.push(el("polyline", { points: line((s) => s.sold), class: "line-sold" }));
      parts.push(el("polyline", { points: line((s) => s.held), class: "line-held" }));
    }
    this.svg.replaceChildren(...parts);
    this.svg.setAttribute("aria-label", this.summary());
    const last = this.samples[this.samples.length - 1];
    this.soldNow.textContent = last ? count(last.sold) : "…";
    this.heldNow.textContent = last ? count(last.held) : "…";
  }

  private summary(): string {
    const first = this.samples[0];
    const last = this.samples[this.samples.length - 1];
    if (!first || !last) return "Holds and sales over time: no samples yet.";
    const sold = last.sold - first.sold;
    return (
      `Holds and sales over time. As of ${clock(last.at)}: ${count(last.held)} seats held, ${count(last.sold)} sold; ` +
      `${sold >= 0 ? `${count(sold)} more sold` : `${count(-sold)} fewer sold`} since ${clock(first.at)}.`
    );
  }
}

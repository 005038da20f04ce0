// Admitted: the venue drawn from the layout's coordinates, coloured by price category
// and greyed where taken (as of the availability's `as_of`); "best available" by
// quantity, category and together; or seats picked on the map. A SEAT_TAKEN answer
// marks the taken seats and highlights the alternatives it offers. With a presale
// code, best available picks among the seats set aside for the code (the map shows
// those as taken to everyone, so it is for looking only).

import type { Hold } from "./gen/stadium/holds/v1/holds_pb.js";
import type { Clients } from "./clients.js";
import type { Admission } from "./queue.js";
import { announce, h, money, show } from "./dom.js";
import { explain, failure, seatIds, type Failure } from "./errors.js";
import { freeSeats, Venue, type SeatInfo } from "./venue.js";

const SVG = "http://www.w3.org/2000/svg";

/** Draws the map and resolves with the fan's hold. */
export async function chooseSeats(
  api: Clients,
  eventId: string,
  admission: Admission,
  venue: Venue,
  notice = "",
  presaleCode: string | null = null,
): Promise<Hold> {
  return new Promise((resolve) => {
    let free = new Set<string>();
    const reported = new Map<string, number>();
    const picked = new Set<string>();
    let pickedSection: bigint | null = null;
    const circles = new Map<string, SVGCircleElement>();
    const message = h("div", { id: "claim-message", role: "alert" });
    if (notice !== "") {
      message.className = "card info";
      message.append(h("p", {}, notice));
    }
    const asOfText = h("p", { id: "as-of", class: "muted" });
    const pickedList = h("ul", { id: "picked-seats" });
    const holdPicked = h("button", { type: "button", id: "hold-picked", disabled: true }, "Hold these seats");

    const categories = venue.layout.categories;
    const categorySelect = h(
      "select",
      { id: "ba-category", name: "category" },
      ...categories.map((c) =>
        h("option", { value: c.code }, `${c.name || c.code}${c.price ? ` — ${money(c.price.amountMinor, c.price.currency)}` : ""}`),
      ),
    );
    const quantity = h("input", { id: "ba-quantity", name: "quantity", type: "number", min: 1, max: 10, value: 2, required: true });
    const together = h("input", { id: "ba-together", name: "together", type: "checkbox", checked: true });
    // Admitted by the general queue, a fan may leave the code aside (its seats gone to
    // general sale, or none left); a presale admission claims only with it.
    const useCode =
      presaleCode !== null && !admission.presale
        ? h("input", { id: "ba-use-code", name: "use-code", type: "checkbox", checked: true })
        : null;
    const bestForm = h(
      "form",
      { class: "card", id: "best-available", "aria-labelledby": "ba-title" },
      h("h3", { id: "ba-title" }, presaleCode === null ? "Best available" : "Best available with your presale code"),
      ...(presaleCode === null
        ? []
        : [h("p", { id: "presale-note", class: "muted" }, "Seats set aside for your presale code, the best first.")]),
      ...(useCode ? [h("div", { class: "field inline" }, useCode, h("label", { for: "ba-use-code" }, "Use my presale code"))] : []),
      h("div", { class: "field" }, h("label", { for: "ba-quantity" }, "How many seats"), quantity),
      h("div", { class: "field" }, h("label", { for: "ba-category" }, "Price category"), categorySelect),
      h("div", { class: "field inline" }, together, h("label", { for: "ba-together" }, "Seats together")),
      h("button", { type: "submit", id: "ba-submit" }, "Find my seats"),
    );

    const svg = document.createElementNS(SVG, "svg");
    svg.setAttribute("id", "seat-map");
    svg.setAttribute("role", "group");
    svg.setAttribute("aria-label", `Seat map of ${venue.layout.venueName}. Arrow keys move between free seats, Space picks.`);
    const pitch = drawMap(svg, venue, circles);

    // On a phone the whole venue is small: the fan can show one section at a time.
    const sectionSelect = h(
      "select",
      { id: "map-section", name: "section" },
      h("option", { value: "" }, "Whole venue"),
      ...venue.layout.sections.map((sec) =>
        h("option", { value: sec.sectionId.toString() }, `Section ${sec.code || sec.name}`),
      ),
    );
    const showSection = (sectionId: string) => {
      sectionSelect.value = sectionId;
      const all = [...venue.seats.values()];
      const shown = sectionId === "" ? all : all.filter((seat) => seat.sectionId.toString() === sectionId);
      frame(svg, shown, pitch);
      order = shown.map((seat) => seat.id.toString());
      const inView = new Set(order);
      for (const [id, circle] of circles) {
        if (inView.has(id)) circle.removeAttribute("aria-hidden");
        else circle.setAttribute("aria-hidden", "true");
      }
      current = null;
      paint();
    };
    sectionSelect.addEventListener("change", () => showSection(sectionSelect.value));

    const legend = h(
      "ul",
      { class: "legend", "aria-label": "Price categories" },
      ...categories.map((c) =>
        h(
          "li",
          {},
          h("span", { class: "swatch", style: `background:${venue.colors.get(c.code) ?? "#888"}`, "aria-hidden": "true" }),
          `${c.name || c.code}${c.price ? ` ${money(c.price.amountMinor, c.price.currency)}` : ""}`,
        ),
      ),
      h("li", {}, h("span", { class: "swatch taken", "aria-hidden": "true" }), "Not available"),
      h("li", {}, h("span", { class: "swatch alternative", "aria-hidden": "true" }), "Suggested instead"),
    );

    // One seat of the map is in the tab order (a roving tab stop); arrows move it.
    let order = [...circles.keys()];
    let current: string | null = null;
    const paint = () => {
      if (current === null || !free.has(current) || !order.includes(current)) {
        current = order.find((id) => free.has(id)) ?? null;
      }
      for (const [id, circle] of circles) {
        const available = free.has(id);
        const seat = venue.seats.get(id)!;
        circle.classList.toggle("taken", !available);
        circle.classList.toggle("picked", picked.has(id));
        circle.setAttribute("aria-checked", picked.has(id) ? "true" : "false");
        circle.setAttribute("aria-disabled", available ? "false" : "true");
        circle.setAttribute("tabindex", id === current ? "0" : "-1");
        circle.setAttribute(
          "aria-label",
          `${venue.describe(seat.id)}, ${seat.category}${seat.accessible ? ", accessible" : ""}${available ? "" : ", not available"}`,
        );
      }
      pickedList.replaceChildren(
        ...[...picked].map((id) => h("li", {}, venue.describe(BigInt(id)))),
      );
      holdPicked.disabled = picked.size === 0;
    };

    const refresh = async () => {
      const availability = await api.seatMap.getAvailability({ eventId, sectionId: 0n });
      const next = freeSeats(availability);
      free = next.free;
      // Seats a refusal named stay taken until a view read after the refusal says otherwise.
      for (const [id, at] of reported) {
        if (next.asOf && next.asOf.getTime() > at) reported.delete(id);
        else free.delete(id);
      }
      for (const id of [...picked]) if (!free.has(id)) picked.delete(id);
      asOfText.textContent = next.asOf
        ? `Seats shown as of ${next.asOf.toLocaleTimeString()}; ${free.size} free.`
        : `${free.size} seats free.`;
      paint();
    };

    const toggle = (id: string) => {
      const seat = venue.seats.get(id);
      if (!seat || !free.has(id)) return;
      if (pickedSection !== null && seat.sectionId !== pickedSection) {
        picked.clear();
        announce("Seats are held one section at a time: your earlier picks were cleared.");
      }
      pickedSection = seat.sectionId;
      current = id;
      if (picked.has(id)) picked.delete(id);
      else picked.add(id);
      paint();
      announce(`${venue.describe(seat.id)} ${picked.has(id) ? "picked" : "unpicked"}. ${picked.size} picked.`);
    };
    svg.addEventListener("click", (e) => {
      const id = (e.target as Element).getAttribute("data-seat-id");
      if (id) toggle(id);
    });
    const focusSeat = (id: string | undefined) => {
      if (id === undefined) return;
      current = id;
      paint();
      circles.get(id)?.focus();
    };
    svg.addEventListener("keydown", (e) => {
      const id = (e.target as Element).getAttribute("data-seat-id");
      if (!id) return;
      const i = order.indexOf(id);
      const isFree = (s: string) => free.has(s);
      switch (e.key) {
        case " ":
        case "Enter":
          toggle(id);
          break;
        case "ArrowRight":
        case "ArrowDown":
          focusSeat(order.slice(i + 1).find(isFree));
          break;
        case "ArrowLeft":
        case "ArrowUp":
          focusSeat(order.slice(0, i).reverse().find(isFree));
          break;
        case "Home":
          focusSeat(order.find(isFree));
          break;
        case "End":
          focusSeat([...order].reverse().find(isFree));
          break;
        default:
          return;
      }
      e.preventDefault();
    });

    const seatTaken = (f: Failure) => {
      const taken = seatIds(f.metadata["taken_seat_ids"]);
      const alternatives = seatIds(f.metadata["alternative_seat_ids"]);
      for (const id of taken) {
        reported.set(id.toString(), Date.now());
        free.delete(id.toString());
        picked.delete(id.toString());
      }
      for (const circle of circles.values()) circle.classList.remove("alternative");
      for (const id of alternatives) circles.get(id.toString())?.classList.add("alternative");
      const where = alternatives[0] ?? taken[0];
      const section = where === undefined ? undefined : venue.seats.get(where.toString())?.sectionId;
      if (section !== undefined) showSection(section.toString());
      paint();
      const parts: Node[] = [h("p", {}, explain(f))];
      if (alternatives.length > 0) {
        const list = h("ul", { id: "alternatives" }, ...alternatives.map((id) => h("li", {}, venue.describe(id))));
        const take = h("button", { type: "button", id: "take-alternatives" }, "Pick the suggested seats");
        take.addEventListener("click", () => {
          picked.clear();
          for (const id of alternatives) picked.add(id.toString());
          pickedSection = venue.seats.get(alternatives[0]!.toString())?.sectionId ?? null;
          paint();
          holdPicked.focus();
        });
        parts.push(h("p", {}, "Highlighted on the map instead:"), list, take);
      } else if (f.metadata["other_section_ids"]) {
        parts.push(h("p", {}, "Other sections still have room: try best available."));
      }
      message.className = "card warning";
      message.replaceChildren(...parts);
    };

    const claimed = (hold: Hold | undefined) => {
      if (!hold) {
        message.className = "card warning";
        message.replaceChildren(h("p", {}, "Nothing fits right now; try again in a moment."));
        return;
      }
      resolve(hold);
    };

    const attempt = async (call: () => Promise<Hold | undefined>, busy: HTMLButtonElement) => {
      busy.disabled = true;
      message.className = "";
      message.replaceChildren();
      try {
        claimed(await call());
      } catch (e) {
        const f = failure(e);
        if (f.reason === "SEAT_TAKEN") seatTaken(f);
        else {
          message.className = "card error";
          message.replaceChildren(h("p", {}, explain(f)));
        }
        await refresh().catch(() => undefined);
      } finally {
        busy.disabled = false;
      }
    };

    bestForm.addEventListener("submit", (e) => {
      e.preventDefault();
      const submit = bestForm.querySelector<HTMLButtonElement>("#ba-submit")!;
      void attempt(async () => {
        const answer = await api.holds.claimBestAvailable({
          admissionToken: admission.token,
          eventId,
          target: { case: "priceCategory", value: categorySelect.value },
          quantity: Number(quantity.value),
          together: together.checked,
          requestId: crypto.randomUUID(),
          presaleCode: presaleCode !== null && (useCode === null || useCode.checked) ? presaleCode : "",
        });
        return answer.hold;
      }, submit);
    });
    holdPicked.addEventListener("click", () => {
      const ids = [...picked].map((id) => BigInt(id)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      if (pickedSection === null || ids.length === 0) return;
      const section = pickedSection;
      void attempt(async () => {
        const answer = await api.holds.claimSeats({
          admissionToken: admission.token,
          eventId,
          sectionId: section,
          seatIds: ids,
          requestId: crypto.randomUUID(),
        });
        return answer.hold;
      }, holdPicked);
    });
    const refreshButton = h("button", { type: "button", id: "refresh-map", class: "secondary" }, "Refresh the map");
    refreshButton.addEventListener("click", () => void refresh());

    show(
      "Choose seats",
      h("h2", {}, `Choose your seats — ${venue.layout.venueName}`),
      message,
      bestForm,
      h(
        "section",
        { class: "card", "aria-labelledby": "map-title" },
        h("h3", { id: "map-title" }, "Or pick seats on the map"),
        asOfText,
        legend,
        h("div", { class: "field" }, h("label", { for: "map-section" }, "Show"), sectionSelect),
        h("div", { class: "map-frame" }, svg),
        refreshButton,
        h("h4", {}, "Picked"),
        pickedList,
        holdPicked,
      ),
    );
    void refresh();
  });
}

/** Fits the map's view to `seats`, with a margin of `pad` plan units. */
function frame(svg: SVGSVGElement, seats: SeatInfo[], pad: number): void {
  if (seats.length === 0) return;
  let minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
  for (const s of seats) {
    minX = Math.min(minX, s.x); maxX = Math.max(maxX, s.x);
    minY = Math.min(minY, s.y); maxY = Math.max(maxY, s.y);
  }
  svg.setAttribute("viewBox", `${minX - pad} ${minY - pad} ${maxX - minX + 2 * pad} ${maxY - minY + 2 * pad}`);
}

/** One circle per seat at its plan position, in the plan's own units; the seat pitch. */
function drawMap(svg: SVGSVGElement, venue: Venue, circles: Map<string, SVGCircleElement>): number {
  const seats = [...venue.seats.values()];
  if (seats.length === 0) return 1;
  let minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
  for (const s of seats) {
    minX = Math.min(minX, s.x); maxX = Math.max(maxX, s.x);
    minY = Math.min(minY, s.y); maxY = Math.max(maxY, s.y);
  }
  // The seat pitch: the median distance between neighbours in a row (rows may curve).
  const gaps: number[] = [];
  const last = new Map<string, { x: number; y: number }>();
  for (const s of seats) {
    const key = `${s.sectionId}/${s.row}`;
    const before = last.get(key);
    if (before) {
      const d = Math.hypot(s.x - before.x, s.y - before.y);
      if (d > 0) gaps.push(d);
    }
    last.set(key, s);
  }
  gaps.sort((a, b) => a - b);
  const pitch = gaps.length > 0 ? gaps[Math.floor(gaps.length / 2)]! : Math.max(1, (maxX - minX) / 50);
  const r = pitch * 0.4;
  frame(svg, seats, pitch);
  svg.setAttribute("preserveAspectRatio", "xMidYMid meet");
  for (const s of seats) {
    const c = document.createElementNS(SVG, "circle");
    c.setAttribute("cx", String(s.x));
    c.setAttribute("cy", String(s.y));
    c.setAttribute("r", String(r));
    c.setAttribute("fill", venue.colors.get(s.category) ?? "#4a6fa5");
    c.setAttribute("role", "checkbox");
    c.setAttribute("data-seat-id", s.id.toString());
    c.setAttribute("data-section-id", s.sectionId.toString());
    c.setAttribute("class", "seat");
    svg.append(c);
    circles.set(s.id.toString(), c);
  }
  return pitch;
}

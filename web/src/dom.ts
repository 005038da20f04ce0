// Small DOM helpers: build elements, swap the main view, announce changes.

type Child = Node | string | null | undefined | false;

/** An element with attributes (`on*` keys become listeners) and children. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | boolean | number | EventListener | undefined> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2).toLowerCase(), value);
    } else if (value === true) {
      el.setAttribute(key, "");
    } else {
      el.setAttribute(key, String(value));
    }
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child);
  }
  return el;
}

/** Replaces the main view with `nodes`, moves focus to its heading, sets the title
 * (followed by the page's own name, its body's `data-site`: the console's differs). */
export function show(title: string, ...nodes: Node[]): void {
  const main = document.getElementById("main")!;
  main.replaceChildren(...nodes);
  document.title = `${title} · ${document.body.dataset["site"] ?? "Tickets"}`;
  const heading = main.querySelector<HTMLElement>("h2");
  if (heading) {
    heading.tabIndex = -1;
    heading.focus();
  } else {
    main.focus();
  }
}

/** Says `text` to screen readers (the page's polite live region). */
export function announce(text: string): void {
  const region = document.getElementById("announcer");
  if (region) region.textContent = text;
}

/** "1 h 02 min", "3 min 05 s", "42 s" for a duration in milliseconds. */
export function duration(ms: number): string {
  const total = Math.max(0, Math.ceil(ms / 1000));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  if (h > 0) return `${h} h ${String(m).padStart(2, "0")} min`;
  if (m > 0) return `${m} min ${String(s).padStart(2, "0")} s`;
  return `${s} s`;
}

/** An amount in minor units as the fan's locale writes it. */
export function money(amountMinor: bigint, currency: string): string {
  const digits = new Intl.NumberFormat("en", { style: "currency", currency })
    .resolvedOptions().maximumFractionDigits ?? 2;
  const value = Number(amountMinor) / 10 ** digits;
  return new Intl.NumberFormat(undefined, { style: "currency", currency }).format(value);
}

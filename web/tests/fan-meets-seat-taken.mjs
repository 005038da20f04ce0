// @ts-check
// A fan picks seats on the map by keyboard; another fan takes one of them first; the
// page answers SEAT_TAKEN with the alternatives highlighted on the map; the fan takes
// the alternatives, holds them, asks for more time and gives them back. Driven by
// crates/stadium-runner/tests/web_page.rs, which plays the other fan when told
// {"picked":[{"seat_id","section_id"}…]} and answers {"taken":true}.

import { ask, run, say, signIn } from "./browser.mjs";

await run(async ({ page, pageUrl, eventId, shot }) => {
  await signIn(page, pageUrl, eventId, "Grace Hopper");
  await page.getByRole("heading", { name: /Choose your seats/ }).waitFor();
  await page.locator("#as-of").filter({ hasText: /free/ }).waitFor();

  // Two seats side by side, by keyboard: the map's one tab stop, Space, an arrow, Space.
  await page.locator('#seat-map circle.seat[tabindex="0"]').focus();
  await page.keyboard.press("Space");
  await page.keyboard.press("ArrowRight");
  await page.keyboard.press("Space");
  const picked = await page
    .locator('#seat-map circle.seat[aria-checked="true"]')
    .evaluateAll((els) =>
      els.map((el) => ({ seat_id: el.getAttribute("data-seat-id"), section_id: el.getAttribute("data-section-id") })),
    );
  if (picked.length !== 2) throw new Error(`${picked.length} seats picked by keyboard, 2 meant`);
  await page.locator("#picked-seats li").nth(1).waitFor();
  await shot("picked");

  // Another fan takes the first of them meanwhile.
  const answer = await ask({ picked });
  if (!answer.taken) throw new Error(`the other fan did not take the seat: ${JSON.stringify(answer)}`);
  await page.getByRole("button", { name: "Hold these seats" }).click();
  await page.locator("#claim-message").filter({ hasText: /just taken/ }).waitFor();
  await page.locator("#alternatives li").first().waitFor();
  const highlighted = await page.locator("#seat-map circle.alternative").count();
  if (highlighted === 0) throw new Error("no alternative highlighted on the map");
  const takenShown = await page
    .locator(`#seat-map circle[data-seat-id="${picked[0]?.seat_id}"]`)
    .getAttribute("aria-disabled");
  if (takenShown !== "true") throw new Error("the taken seat is not shown as taken");
  await shot("seat-taken");

  // The alternatives, held; more time; given back.
  await page.getByRole("button", { name: "Pick the suggested seats" }).click();
  await page.getByRole("button", { name: "Hold these seats" }).click();
  await page.getByRole("heading", { name: "Your seats are held" }).waitFor();
  const held = await page.locator("#held-seats li").count();
  await shot("hold");
  await page.getByRole("button", { name: "More time" }).click();
  await page.locator("#hold-message").filter({ hasText: /Extended|cannot be extended/ }).waitFor();
  await shot("extended");
  await page.getByRole("button", { name: "Give the seats back" }).click();
  await page.getByRole("heading", { name: /Choose your seats/ }).waitFor();
  await page.locator("#claim-message").filter({ hasText: /gave the seats back/ }).waitFor();
  await shot("released");
  say({ held, released: true });
});

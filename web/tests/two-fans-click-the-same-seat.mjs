// @ts-check
// Two fans, each in a browser of their own, pick the same seat on the map and press
// "Hold these seats" one after the other: the first holds it, the second is told the
// seat was just taken and sees the alternatives highlighted on the map. Driven by
// crates/stadium-runner/tests/web_page.rs, which checks, told {"seat_id",…}, that the
// seat is held once.

import { run, say, signIn } from "./browser.mjs";

/** Signs `name` in and picks the map's first free seat by keyboard: its id.
 * @param {import("playwright-core").Page} page @param {string} pageUrl
 * @param {string} eventId @param {string} name */
async function pickFirstSeat(page, pageUrl, eventId, name) {
  await signIn(page, pageUrl, eventId, name);
  await page.getByRole("heading", { name: /Choose your seats/ }).waitFor();
  await page.locator("#as-of").filter({ hasText: /free/ }).waitFor();
  const seat = page.locator('#seat-map circle.seat[tabindex="0"]');
  await seat.focus();
  await page.keyboard.press("Space");
  await page.locator("#picked-seats li").first().waitFor();
  const id = await seat.getAttribute("data-seat-id");
  if (!id) throw new Error(`${name} picked no seat`);
  return id;
}

await run(async ({ page: ada, pageUrl, eventId, newBrowser, shot }) => {
  const alan = await newBrowser();
  const [adaSeat, alanSeat] = await Promise.all([
    pickFirstSeat(ada, pageUrl, eventId, "Ada Lovelace"),
    pickFirstSeat(alan, pageUrl, eventId, "Alan Turing"),
  ]);
  if (adaSeat !== alanSeat) throw new Error(`different seats picked: ${adaSeat} and ${alanSeat}`);
  await shot("ada-picked", ada);
  await shot("alan-picked", alan);

  // Ada presses first and holds the seat.
  await ada.getByRole("button", { name: "Hold these seats" }).click();
  await ada.getByRole("heading", { name: "Your seats are held" }).waitFor();
  await shot("ada-holds", ada);

  // Alan presses next: the seat is gone, the page says so and offers others.
  await alan.getByRole("button", { name: "Hold these seats" }).click();
  await alan.locator("#claim-message").filter({ hasText: /just taken/ }).waitFor();
  await alan.locator("#alternatives li").first().waitFor();
  const highlighted = await alan.locator("#seat-map circle.alternative").count();
  if (highlighted === 0) throw new Error("no alternative highlighted on Alan's map");
  const shownTaken = await alan.locator(`#seat-map circle[data-seat-id="${adaSeat}"]`).getAttribute("aria-disabled");
  if (shownTaken !== "true") throw new Error("Alan's map does not show the seat as taken");
  await shot("alan-seat-taken", alan);
  say({ seat_id: adaSeat, alternatives: highlighted });
});

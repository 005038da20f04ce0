// @ts-check
// A fan holds two seats and lets the hold run out: the countdown, taken from the
// server's expires_in_ms, reaches zero; the page says the hold ran out and is back on
// the map, where the seats are free again. Driven by
// crates/stadium-runner/tests/web_page.rs, which gives the event a hold lifetime of a
// few seconds and, told {"lapsed":true,…}, checks that no seat of the event is held.

import { run, say, signIn } from "./browser.mjs";

/** How many seats the map says are free ("…; 998 free."). @param {import("playwright-core").Page} page */
async function freeOnMap(page) {
  const text = (await page.locator("#as-of").textContent()) ?? "";
  const found = /(\d+) (?:seats )?free/.exec(text);
  if (!found) throw new Error(`the map does not say how many seats are free: ${JSON.stringify(text)}`);
  return Number(found[1]);
}

await run(async ({ page, pageUrl, eventId, shot }) => {
  await signIn(page, pageUrl, eventId, "Margaret Hamilton");
  await page.getByRole("heading", { name: /Choose your seats/ }).waitFor();
  await page.locator("#as-of").filter({ hasText: /free/ }).waitFor();
  const freeBefore = await freeOnMap(page);
  await page.getByLabel("How many seats").fill("2");
  await page.getByRole("button", { name: "Find my seats" }).click();

  await page.getByRole("heading", { name: "Your seats are held" }).waitFor();
  await page.locator("#hold-countdown").filter({ hasText: /Seats held for/ }).waitFor();
  await shot("hold");
  const heldAt = Date.now();

  // Nothing pressed: the countdown runs out and the page goes back to the map.
  await page.getByRole("heading", { name: /Choose your seats/ }).waitFor();
  const lapsedAfterMs = Date.now() - heldAt;
  await page.getByText(/Your hold ran out/).waitFor();
  await page.locator("#as-of").filter({ hasText: /free/ }).waitFor();

  // The seats are free again: the map reads availability that may be a moment old, so
  // the fan refreshes it (as a person would) until it shows them.
  let freeAfter = await freeOnMap(page);
  while (freeAfter < freeBefore) {
    await page.waitForTimeout(1_000);
    await page.getByRole("button", { name: "Refresh the map" }).click();
    freeAfter = await freeOnMap(page);
  }
  await shot("lapsed");
  say({ lapsed: true, free_before: freeBefore, free_after: freeAfter, lapsed_after_ms: lapsedAfterMs });
});

// @ts-check
// A fan waits in the queue behind the event's cap on admitted fans: the page shows the
// position, an estimate and a progress bar; the box office pauses the sale and the page
// says so; it closes the sale and the page says that. Driven by
// crates/stadium-runner/tests/web_page.rs, which pauses when told {"waiting":true}
// and closes when told {"paused":true}, answering {"done":true} each time.

import { ask, run, say, signIn } from "./browser.mjs";

await run(async ({ page, pageUrl, eventId, shot }) => {
  await signIn(page, pageUrl, eventId, "Katherine Johnson");

  await page.locator('[data-queue-state="waiting"]').waitFor();
  await page.locator("#position").filter({ hasText: /^\d+$/ }).waitFor();
  await page.getByRole("progressbar", { name: "Progress" }).waitFor();
  await page.locator("#eta").filter({ hasText: /Estimated wait/ }).waitFor();
  await shot("waiting");

  await ask({ waiting: true });
  await page.locator('[data-queue-state="paused"]').waitFor();
  await page.getByRole("heading", { name: "The sale is paused" }).waitFor();
  await shot("paused");

  await ask({ paused: true });
  await page.locator('[data-queue-state="closed"]').waitFor();
  await page.getByRole("heading", { name: "The sale is closed" }).waitFor();
  await shot("closed");
  say({ closed: true });
});

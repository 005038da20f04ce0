// @ts-check
// A fan's whole purchase: signs in before the opening, sees the countdown, is admitted
// at the opening, takes best available, is declined with one test card and pays with
// another, and sees tickets with QR codes. Driven by crates/stadium-runner/tests/web_page.rs,
// which verifies the ticket codes this script reports ({"tickets":[codes]}).

import { payAndReadTickets, run, say, signIn } from "./browser.mjs";

await run(async ({ page, pageUrl, eventId, shot }) => {
  await signIn(page, pageUrl, eventId, "Ada Lovelace");

  // Before the opening: the countdown.
  await page.locator('[data-queue-state="pre-queue"]').waitFor();
  await page.getByRole("timer").filter({ hasText: /Opens in|Opening now/ }).waitFor();
  await shot("countdown");

  // Admitted at the opening: the venue drawn.
  await page.getByRole("heading", { name: /Choose your seats/ }).waitFor();
  await page.locator("#as-of").filter({ hasText: /free/ }).waitFor();
  const seats = await page.locator("#seat-map circle.seat").count();
  if (seats === 0) throw new Error("the venue is not drawn");
  await shot("seat-map");

  // Best available: two seats together in the first price category.
  await page.getByLabel("How many seats").fill("2");
  const together = page.getByLabel("Seats together");
  if (!(await together.isChecked())) await together.check();
  await page.getByRole("button", { name: "Find my seats" }).click();

  // Holding: the countdown from the server's expires_in_ms, then payment.
  await page.getByRole("heading", { name: "Your seats are held" }).waitFor();
  await page.locator("#hold-countdown").filter({ hasText: /Seats held for/ }).waitFor();
  const held = await page.locator("#held-seats li").count();
  if (held !== 2) throw new Error(`${held} seats held, 2 asked for`);
  await shot("hold");

  // A declined card first: the page says so and the hold stays payable.
  await page.getByLabel(/Test card that is declined/).check();
  await page.getByRole("button", { name: "Pay" }).click();
  await page.locator("#hold-message").filter({ hasText: /declined/ }).waitFor();
  await shot("declined");
  // Then the card that pays: tickets, each with a QR code of its signed code.
  const codes = await payAndReadTickets(page);
  const qrCodes = await page.locator("[data-ticket-code] .qr svg").count();
  if (qrCodes !== codes.length) throw new Error(`${qrCodes} QR codes for ${codes.length} tickets`);
  await shot("tickets");
  say({ tickets: codes });
});

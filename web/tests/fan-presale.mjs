// @ts-check
// A fan-club member buys in the presale: signed in before the general on-sale, the fan
// sees the general sale's countdown and a field for a presale code; entering the club's
// code takes the fan through the presale's own queue to the seats, where best
// available picks among the seats set aside for the code; the fan pays and gets
// tickets; staff then see the presale on the console, its queue's counters read from
// the presale queue. Driven by crates/stadium-runner/tests/web_page.rs, which starts the presale,
// sends {"code", "category"} and checks that the tickets are for the club's seats.

import { payAndReadTickets, run, say, signIn, signInStaff } from "./browser.mjs";

await run(async ({ page, pageUrl, eventId, setup, newTab, shot }) => {
  const code = String(setup["code"]);
  const category = String(setup["category"]);
  await signIn(page, pageUrl, eventId, "Grace Hopper");

  // The general sale has not begun: its countdown, and a way in with a code.
  await page.locator('[data-queue-state="pre-queue"]').waitFor();
  // The on-sale is ten minutes away, and the countdown says so.
  await page.getByRole("timer").filter({ hasText: /Opens in (9|10) min/ }).waitFor();
  await shot("general-countdown");
  await page.getByLabel("Have a presale code?").fill(code);
  await page.getByRole("button", { name: "Use my code" }).click();

  // The presale's queue admits at once: best available among the club's seats.
  await page.getByRole("heading", { name: /Choose your seats/ }).waitFor();
  await page.getByRole("heading", { name: "Best available with your presale code" }).waitFor();
  await page.locator("#as-of").filter({ hasText: /free/ }).waitFor();
  await shot("presale-seats");
  await page.getByLabel("How many seats").fill("2");
  await page.getByLabel("Price category").selectOption(category);
  const together = page.getByLabel("Seats together");
  if (await together.isChecked()) await together.uncheck();
  await page.getByRole("button", { name: "Find my seats" }).click();

  await page.getByRole("heading", { name: "Your seats are held" }).waitFor();
  await shot("hold");
  const codes = await payAndReadTickets(page);
  await shot("tickets");

  // The box office's console shows the presale and reads the presale's queue.
  const staff = await newTab();
  await signInStaff(staff, pageUrl, eventId, "Ada Lovelace", "box_office");
  await staff.locator('#sale-state[data-sale-state="PRESALE"]').waitFor();
  await staff.locator("#queue-which").filter({ hasText: "Presale queue" }).waitFor();
  await staff.locator("#queue-admitted").filter({ hasText: /^[1-9]/ }).waitFor();
  await shot("console", staff);
  say({ tickets: codes });
});

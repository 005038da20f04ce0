// @ts-check
// A fan's whole purchase in headless Chromium: signs in before the opening, sees the
// countdown, is admitted at the opening, takes best available, pays with the
// simulated provider's test card and sees tickets with QR codes.
//
// Driven by the runner's test (crates/stadium-runner/tests/web_page.rs), which starts
// the services and the page: this script launches the browser, prints {"ready":true},
// reads one JSON line {"page_url","event_id","screenshots"} from stdin, runs the story,
// saves a screenshot at each step into `screenshots`, and prints {"tickets":[codes]}
// for the test to verify. Nothing is fetched from the internet.

import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { chromium } from "playwright-core";

const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const STEP_TIMEOUT_MS = 90_000;
const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** @param {unknown} value */
const say = (value) => process.stdout.write(`${JSON.stringify(value)}\n`);

/** The first line on stdin, as JSON. */
async function instructions() {
  const lines = createInterface({ input: process.stdin });
  for await (const line of lines) {
    lines.close();
    return JSON.parse(line);
  }
  throw new Error("no instructions on stdin");
}

const profile = mkdtempSync(join(tmpdir(), "stadium-chromium-"));
// The services' certificates come from the run's own development authority, which
// this fresh profile cannot know; the page's own origin is plain loopback HTTP.
const context = await chromium.launchPersistentContext(profile, {
  executablePath: CHROMIUM,
  headless: true,
  args: ARGS,
  ignoreHTTPSErrors: true,
  viewport: { width: 390, height: 844 },
  isMobile: false,
  locale: "en-GB",
});
const page = context.pages()[0] ?? (await context.newPage());
page.setDefaultTimeout(STEP_TIMEOUT_MS);
page.on("console", (m) => {
  if (m.type() === "error" || m.type() === "warning") console.error(`page ${m.type()}: ${m.text()}`);
});
page.on("pageerror", (e) => console.error(`page error: ${e.message}`));

say({ ready: true });
const { page_url: pageUrl, event_id: eventId, screenshots } = await instructions();
mkdirSync(screenshots, { recursive: true });
let step = 0;
/** @param {string} name */
const shot = async (name) => {
  step += 1;
  await page.screenshot({ path: join(screenshots, `${String(step).padStart(2, "0")}-${name}.png`), fullPage: true });
};

try {
  await page.goto(`${pageUrl}/?event=${encodeURIComponent(eventId)}`);

  // Sign in by keyboard: the field is found by its label.
  const name = page.getByLabel("Your name");
  await name.focus();
  await page.keyboard.type("Ada Lovelace");
  await shot("sign-in");
  await page.keyboard.press("Enter");

  // Before the opening: the countdown.
  await page.locator('[data-queue-state="pre-queue"]').waitFor();
  const countdown = page.getByRole("timer");
  await countdown.filter({ hasText: /Opens in|Opening now/ }).waitFor();
  await shot("countdown");

  // Admitted at the opening: the seat map.
  await page.getByRole("heading", { name: /Choose your seats/ }).waitFor();
  await page.locator("#as-of").filter({ hasText: /free/ }).waitFor();
  const map = await page.locator("#seat-map").evaluate((svg) => ({
    seats: svg.querySelectorAll("circle.seat").length,
    viewBox: svg.getAttribute("viewBox"),
    box: svg.getBoundingClientRect().toJSON(),
    first: svg.querySelector("circle.seat")?.outerHTML ?? "",
  }));
  console.error(`seat map: ${JSON.stringify(map)}`);
  if (map.seats === 0) throw new Error("the venue is not drawn");
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
  await page.getByLabel(/Test card that pays/).check();
  await page.getByRole("button", { name: "Pay" }).click();

  // Tickets, each with a QR code of its signed code.
  await page.getByRole("heading", { name: "Your tickets" }).waitFor();
  const tickets = page.locator("[data-ticket-code]");
  const codes = await tickets.evaluateAll((els) => els.map((el) => el.getAttribute("data-ticket-code") ?? ""));
  const qrCodes = await page.locator("[data-ticket-code] .qr svg").count();
  if (qrCodes !== codes.length) throw new Error(`${qrCodes} QR codes for ${codes.length} tickets`);
  await shot("tickets");
  say({ tickets: codes });
} catch (error) {
  await shot("failure").catch(() => undefined);
  console.error(`story failed: ${error instanceof Error ? error.stack : String(error)}`);
  process.exitCode = 1;
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}

// @ts-check
// What every browser story shares: Debian's Chromium launched by playwright-core on a
// fresh profile (nothing fetched from the internet), a line-by-line JSON conversation
// with the Rust test that drives the stack (stdout out, stdin in), and numbered
// screenshots in the folder the test names.

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

const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

/** Tells the test `value` (one JSON line). @param {unknown} value */
export const say = (value) => process.stdout.write(`${JSON.stringify(value)}\n`);

/** Tells the test `value` and waits for its answer. @param {unknown} value */
export async function ask(value) {
  say(value);
  const next = await lines.next();
  if (next.done) throw new Error("the test closed the conversation");
  return JSON.parse(next.value);
}

/**
 * Launches the browser at a phone's width, says {"ready":true}, reads the test's
 * {"page_url","event_id","screenshots"}, runs `story`, and always closes the browser.
 * A failing story leaves a `failure` screenshot and sets the exit status.
 * @param {(s: { page: import("playwright-core").Page, pageUrl: string, eventId: string,
 *   shot: (name: string) => Promise<void> }) => Promise<void>} story
 */
export async function run(story) {
  const profile = mkdtempSync(join(tmpdir(), "stadium-chromium-"));
  // The services' certificates come from the run's own development authority, which
  // this fresh profile cannot know; the page's own origin is plain loopback HTTP.
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
    ignoreHTTPSErrors: true,
    viewport: { width: 390, height: 844 },
    locale: "en-GB",
  });
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(STEP_TIMEOUT_MS);
  page.on("console", (m) => {
    if (m.type() === "error" || m.type() === "warning") console.error(`page ${m.type()}: ${m.text()}`);
  });
  page.on("pageerror", (e) => console.error(`page error: ${e.message}`));
  let step = 0;
  let folder = "";
  /** @param {string} name */
  const shot = async (name) => {
    step += 1;
    await page.screenshot({ path: join(folder, `${String(step).padStart(2, "0")}-${name}.png`), fullPage: true });
  };
  try {
    const { page_url: pageUrl, event_id: eventId, screenshots } = await ask({ ready: true });
    folder = screenshots;
    mkdirSync(folder, { recursive: true });
    await story({ page, pageUrl, eventId, shot });
  } catch (error) {
    if (folder) await shot("failure").catch(() => undefined);
    console.error(`story failed: ${error instanceof Error ? error.stack : String(error)}`);
    process.exitCode = 1;
  } finally {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
    process.stdin.destroy();
  }
}

/**
 * Opens the page for the event and signs in by keyboard as `name`.
 * @param {import("playwright-core").Page} page @param {string} pageUrl
 * @param {string} eventId @param {string} name
 */
export async function signIn(page, pageUrl, eventId, name) {
  await page.goto(`${pageUrl}/?event=${encodeURIComponent(eventId)}`);
  await page.getByLabel("Your name").focus();
  await page.keyboard.type(name);
  await page.keyboard.press("Enter");
}

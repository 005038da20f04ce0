// @ts-check
// What every browser story shares: Debian's Chromium launched by playwright-core on a
// fresh profile (nothing fetched from the internet), one tab or more, a line-by-line
// JSON conversation with the Rust test that drives the stack (stdout out, stdin in),
// numbered screenshots in the folder the test names, and signing in as a fan or as
// staff.

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

/** Logs a tab's errors and warnings, and gives its steps the story's timeout.
 * @param {import("playwright-core").Page} page @param {string} name */
function watch(page, name) {
  page.setDefaultTimeout(STEP_TIMEOUT_MS);
  page.on("console", (m) => {
    if (m.type() === "error" || m.type() === "warning") console.error(`${name} ${m.type()}: ${m.text()}`);
  });
  page.on("pageerror", (e) => console.error(`${name} error: ${e.message}`));
}

/** Chromium at a phone's width on the fresh profile in `profile`.
 * @param {string} profile */
function launch(profile) {
  // The services' certificates come from the run's own development authority, which
  // a fresh profile cannot know; the page's own origin is plain loopback HTTP.
  return chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
    ignoreHTTPSErrors: true,
    viewport: { width: 390, height: 844 },
    locale: "en-GB",
  });
}

/**
 * Launches the browser at a phone's width, says {"ready":true}, reads the test's
 * {"page_url","event_id","screenshots", …}, runs `story`, and always closes the browser.
 * The story gets the first tab (`page`), `newTab()` for more tabs of the same browser
 * (one profile: tabs share cookies, each has its own sessionStorage), the test's whole
 * answer (`setup`, for fields a story needs beyond the three), `newBrowser()` for a tab
 * of another person's browser (a second browser context on a profile of its own: its
 * own cookies and storage), and `shot(name, tab?)`,
 * numbered screenshots of `page` or of another tab. A failing story leaves a `failure`
 * screenshot of every open tab and sets the exit status.
 * @param {(s: { page: import("playwright-core").Page, pageUrl: string, eventId: string,
 *   setup: Record<string, any>, newTab: () => Promise<import("playwright-core").Page>,
 *   newBrowser: () => Promise<import("playwright-core").Page>,
 *   shot: (name: string, tab?: import("playwright-core").Page) => Promise<void> }) => Promise<void>} story
 */
export async function run(story) {
  const profile = mkdtempSync(join(tmpdir(), "stadium-chromium-"));
  const context = await launch(profile);
  const page = context.pages()[0] ?? (await context.newPage());
  watch(page, "page");
  let tabs = 1;
  const newTab = async () => {
    const tab = await context.newPage();
    tabs += 1;
    watch(tab, `tab ${tabs}`);
    return tab;
  };
  /** Other people's browsers: each its own profile, cookies and storage.
   * @type {{ browser: import("playwright-core").BrowserContext, profile: string }[]} */
  const others = [];
  const newBrowser = async () => {
    const other = mkdtempSync(join(tmpdir(), "stadium-chromium-"));
    const browser = await launch(other);
    others.push({ browser, profile: other });
    const tab = browser.pages()[0] ?? (await browser.newPage());
    tabs += 1;
    watch(tab, `browser ${others.length + 1}`);
    return tab;
  };
  let step = 0;
  let folder = "";
  /** @param {string} name @param {import("playwright-core").Page} [tab] */
  const shot = async (name, tab = page) => {
    step += 1;
    await tab.screenshot({ path: join(folder, `${String(step).padStart(2, "0")}-${name}.png`), fullPage: true });
  };
  try {
    const setup = await ask({ ready: true });
    const { page_url: pageUrl, event_id: eventId, screenshots } = setup;
    folder = screenshots;
    mkdirSync(folder, { recursive: true });
    await story({ page, pageUrl, eventId, setup, newTab, newBrowser, shot });
  } catch (error) {
    if (folder) {
      const open = [...context.pages(), ...others.flatMap((o) => o.browser.pages())];
      for (const [i, tab] of open.entries()) {
        await shot(open.length > 1 ? `failure-tab${i + 1}` : "failure", tab).catch(() => undefined);
      }
    }
    console.error(`story failed: ${error instanceof Error ? error.stack : String(error)}`);
    process.exitCode = 1;
  } finally {
    for (const other of others) {
      await other.browser.close();
      rmSync(other.profile, { recursive: true, force: true });
    }
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

/**
 * Opens the staff console for the event and signs in by keyboard as `name` with
 * `role` (the role select's value or label: "box_office" or "Box office", "sre" or
 * "SRE"; development mode).
 * @param {import("playwright-core").Page} page @param {string} pageUrl
 * @param {string} eventId @param {string} name @param {string} role
 */
export async function signInStaff(page, pageUrl, eventId, name, role) {
  await page.goto(`${pageUrl}/console?event=${encodeURIComponent(eventId)}`);
  await page.getByLabel("Role").selectOption(role);
  await page.getByLabel("Your name").focus();
  await page.keyboard.type(name);
  await page.keyboard.press("Enter");
}

/**
 * Pays the held seats with the test card that pays and waits for the tickets; their
 * signed codes. @param {import("playwright-core").Page} page @returns {Promise<string[]>}
 */
export async function payAndReadTickets(page) {
  await page.getByLabel(/Test card that pays/).check();
  await page.getByRole("button", { name: "Pay" }).click();
  await page.getByRole("heading", { name: "Your tickets" }).waitFor();
  return page
    .locator("[data-ticket-code]")
    .evaluateAll((els) => els.map((el) => el.getAttribute("data-ticket-code") ?? ""));
}

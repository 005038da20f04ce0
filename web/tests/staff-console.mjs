// @ts-check
// The box office's live console next to a fan: a fan waits in the queue in one tab;
// in another, staff member Ada Lovelace (role box_office) opens the console on the
// event, sees it on sale at 1.0 admitted per second, raises the rate to 600 fans per
// minute and watches the measured admissions follow, pauses the sale and sees the fan's
// tab say so, then finds a fan's paid order and refunds it. Driven by
// crates/stadium-runner/tests/web_page.rs, which sets the event up (on sale at 60 fans
// per minute, no cap, thousands queued; `fan_with_order` has the paid order
// `order_id`) and checks what the story reports: {"rate_followed": admitted/s},
// {"paused_after_ms": ms} (informational) and {"refunded": order id}.

import { run, say, signIn, signInStaff } from "./browser.mjs";

/** How long the measured admissions may take to follow a new rate. */
const FOLLOW_TIMEOUT_MS = 120_000;

/**
 * Polls the number in `selector` until `ok` holds; returns it.
 * @param {import("playwright-core").Page} tab @param {string} selector
 * @param {(n: number) => boolean} ok @param {number} timeoutMs
 */
async function pollNumber(tab, selector, ok, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  for (;;) {
    last = ((await tab.locator(selector).textContent()) ?? "").trim();
    const value = Number(last);
    if (last !== "" && Number.isFinite(value) && ok(value)) return value;
    if (Date.now() > deadline) throw new Error(`${selector} still reads ${JSON.stringify(last)} after ${timeoutMs} ms`);
    await tab.waitForTimeout(500);
  }
}

await run(async ({ page: fan, pageUrl, eventId, setup, newTab, shot }) => {
  const fanWithOrder = String(setup.fan_with_order ?? "");
  const orderId = String(setup.order_id ?? "");
  if (fanWithOrder === "" || orderId === "") throw new Error(`the test named no fan and order: ${JSON.stringify(setup)}`);

  // A fan in the queue, in the first tab.
  await signIn(fan, pageUrl, eventId, "Katherine Johnson");
  await fan.locator('[data-queue-state="waiting"]').waitFor();

  // The console, in a second tab: the event on sale at 60 fans per minute.
  const staff = await newTab();
  await signInStaff(staff, pageUrl, eventId, "Ada Lovelace", "box_office");
  await staff.locator("#staff-roles").filter({ hasText: "Box office" }).waitFor();
  await staff.locator('#sale-state[data-sale-state="ON_SALE"]').waitFor();
  await staff.locator("#configured-per-second").filter({ hasText: /^1\.0$/ }).waitFor();
  await staff.locator("#admitted-per-second").filter({ hasText: /^\d+\.\d$/ }).waitFor();
  await staff.locator("#heatmap li").first().waitFor();
  await shot("dashboard", staff);

  // 600 fans per minute: the configured rate says 10.0 and the measured one follows.
  await staff.getByLabel("Admission rate (fans per minute)").fill("600");
  await staff.getByRole("button", { name: "Apply", exact: true }).click();
  await staff.locator("#rate-message").filter({ hasText: /600 fans per minute/ }).waitFor();
  await staff.locator("#configured-per-second").filter({ hasText: /^10\.0$/ }).waitFor();
  const followed = await pollNumber(staff, "#admitted-per-second", (n) => n >= 5, FOLLOW_TIMEOUT_MS);
  await shot("rate-changed", staff);
  say({ rate_followed: followed });

  // Pause: the fan's tab says so.
  await staff.getByRole("button", { name: "Pause sale", exact: true }).click();
  const pausedAt = Date.now();
  await fan.locator('[data-queue-state="paused"]').waitFor();
  say({ paused_after_ms: Date.now() - pausedAt });
  await staff.locator('#sale-state[data-sale-state="PAUSED"]').waitFor();
  await shot("console-paused", staff);
  await shot("fan-paused", fan);

  // A fan's orders: the paid one, refunded after the in-page confirmation.
  await staff.bringToFront();
  await staff.getByLabel("Fan id").fill(fanWithOrder);
  await staff.getByRole("button", { name: "Find orders" }).click();
  const row = staff.locator(`tr[data-order-id="${orderId}"]`);
  await row.waitFor();
  const before = await row.getAttribute("data-order-status");
  if (before !== "PAID") throw new Error(`order ${orderId} is ${before}, not PAID`);
  await row.getByRole("button", { name: "Refund", exact: true }).click();
  const confirm = staff.getByRole("alertdialog");
  await confirm.getByLabel("Reason (optional)").fill("The fan asked at the box office");
  await confirm.getByRole("button", { name: "Refund the order" }).click();
  await staff.locator(`tr[data-order-id="${orderId}"][data-order-status="REFUNDED"]`).waitFor();
  await shot("refunded", staff);
  say({ refunded: orderId });
});

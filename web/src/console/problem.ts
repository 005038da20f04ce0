// A failed call as the console shows it: the words of errors.ts, with the code and the
// reason staff can quote (e.g. PERMISSION_DENIED/ROLE_REQUIRED), on an element that
// carries the reason in `data-reason`.

import { Code } from "@connectrpc/connect";
import { h } from "../dom.js";
import { explain, failure, type Failure } from "../errors.js";

/** `PERMISSION_DENIED` of a numeric code as `failure` gives it. */
function codeName(code: string): string {
  const name = Code[Number(code)] ?? "";
  return name.replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
}

/** A call that never reached its service (the service is down, or the browser refused its certificate). */
function unreachable(f: Failure): boolean {
  return f.reason === "" && /fetch|network/i.test(f.message);
}

/** A call whose deadline passed before its service answered. */
function timedOut(f: Failure): boolean {
  return f.reason === "" && Number(f.code) === Code.DeadlineExceeded;
}

/** `UNAUTHENTICATED/TOKEN_EXPIRED`: the code and reason staff can quote ("" when neither). */
export function tag(f: Failure): string {
  return [codeName(f.code), f.reason].filter((s) => s !== "").join("/");
}

/** The words for a failed call: what happened, then code/reason. */
export function describe(error: unknown): { text: string; reason: string } {
  const f = failure(error);
  if (unreachable(f)) {
    return {
      text:
        "The service cannot be reached: it may be down, or this browser may not trust its certificate " +
        "(open its address once to check).",
      reason: "UNREACHABLE",
    };
  }
  if (timedOut(f)) {
    return { text: "The service did not answer in time. (DEADLINE_EXCEEDED)", reason: "DEADLINE_EXCEEDED" };
  }
  const t = tag(f);
  return { text: t ? `${explain(f)} (${t})` : explain(f), reason: f.reason };
}

/**
 * Shows `error` in `slot` (an element with role="alert"): replaced only when its words
 * change, so a panel that fails every second is announced once.
 */
export function showProblem(slot: HTMLElement, error: unknown): void {
  const { text, reason } = describe(error);
  if (slot.textContent === text) return;
  slot.className = "card error problem";
  slot.dataset["reason"] = reason;
  slot.replaceChildren(h("p", {}, text));
}

/** Clears `slot` after a call that worked. */
export function clearProblem(slot: HTMLElement): void {
  if (slot.childNodes.length === 0) return;
  slot.className = "";
  delete slot.dataset["reason"];
  slot.replaceChildren();
}

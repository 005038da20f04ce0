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

/** A call that never reached its service: most often a certificate the browser does not trust. */
function unreachable(f: Failure): boolean {
  return f.reason === "" && /fetch|network/i.test(f.message);
}

/** The words for a failed call: what happened, then code/reason. */
export function describe(error: unknown): { text: string; reason: string } {
  const f = failure(error);
  if (unreachable(f)) {
    return {
      text: "The service cannot be reached: check that this browser trusts its certificate, then reload.",
      reason: "UNREACHABLE",
    };
  }
  const code = codeName(f.code);
  const tag = [code, f.reason].filter((s) => s !== "").join("/");
  return { text: tag ? `${explain(f)} (${tag})` : explain(f), reason: f.reason };
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

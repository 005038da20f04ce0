// Every stadium error carries a google.rpc.ErrorInfo: a stable reason to branch on and
// metadata such as the seats taken and their alternatives (common.proto).

import { ConnectError } from "@connectrpc/connect";
import { ErrorInfoSchema } from "./gen/google/rpc/error_info_pb.js";

/** The reason and metadata of a failed call; `reason` is "" when none came. */
export interface Failure {
  code: string;
  reason: string;
  metadata: Record<string, string>;
  message: string;
}

/** Reads a thrown value as a stadium failure. */
export function failure(error: unknown): Failure {
  const err = ConnectError.from(error);
  const info = err.findDetails(ErrorInfoSchema)[0];
  return {
    code: String(err.code),
    reason: info?.reason ?? "",
    metadata: info ? { ...info.metadata } : {},
    message: err.rawMessage,
  };
}

/** Comma-separated decimal seat ids from error metadata. */
export function seatIds(value: string | undefined): bigint[] {
  if (!value) return [];
  return value
    .split(",")
    .map((s) => s.trim())
    .filter((s) => /^\d+$/.test(s))
    .map((s) => BigInt(s));
}

/** "the role sre", "one of the roles box_office or sre": a `roles` list (comma-separated). */
function roles(list: string | undefined): string {
  const names = (list ?? "").split(",").map((r) => r.trim()).filter((r) => r !== "");
  const last = names[names.length - 1];
  if (last === undefined) return "another role";
  if (names.length === 1) return `the role ${last}`;
  return `one of the roles ${names.slice(0, -1).join(", ")} or ${last}`;
}

/** "On sale" of "on_sale" (or "ON_SALE"): an event status as the pages write it. */
function statusLabel(name: string): string {
  const lower = name.toLowerCase().replace(/_/g, " ");
  return lower.charAt(0).toUpperCase() + lower.slice(1);
}

/** Words a fan (or a staff member, for the console's calls) can act on for a failure. */
export function explain(f: Failure): string {
  switch (f.reason) {
    case "TOKEN_EXPIRED":
    case "TOKEN_INVALID":
    case "TOKEN_MISSING":
      return "Your session has ended. Sign in again.";
    case "EVENT_NOT_ON_SALE":
      return f.metadata["status"] === "presale"
        ? "Only presale code holders can buy right now; the general sale has not begun."
        : "This event is not on sale right now.";
    case "EVENT_NOT_FOUND":
      return "There is no such event.";
    case "PRESALE_CODE_INVALID":
      return "That presale code is not valid for this event (or its presale seats went on general sale).";
    case "PRESALE_CODE_REQUIRED":
      return "You came in through the presale: buy with your presale code.";
    case "SEAT_NOT_IN_CHANNEL":
      return "Those seats are not set aside for your presale code.";
    case "SEAT_TAKEN":
      return "Those seats were just taken by someone else.";
    case "LIMIT_EXCEEDED":
      return `That is more seats than allowed (at most ${f.metadata["max"] ?? "a few"}).`;
    case "HOLD_EXPIRED":
      return "Your hold ran out; the seats went back on sale.";
    case "HOLD_LIFETIME_REACHED":
      return "This hold cannot be extended any further.";
    case "PAYMENT_STARTED":
      return "Paying has started for these seats: they are kept for the payment.";
    case "PAYMENT_DECLINED":
      return "The card was declined. Try another card.";
    case "ADMISSION_EXPIRED":
    case "ADMISSION_REVOKED":
      return "Your turn has ended. Join the queue again.";
    case "ROLE_REQUIRED":
      return `Your role does not allow this: it takes ${roles(f.metadata["roles"])}.`;
    case "INVALID_TRANSITION": {
      const from = f.metadata["from"];
      const to = f.metadata["to"];
      return `The sale cannot go from ${from ? statusLabel(from) : "its state"} to ${to ? statusLabel(to) : "that state"}.`;
    }
    case "PRICES_MISSING":
      return `Some seats have no price yet (${f.metadata["categories"] ?? "their categories"}).`;
    case "ORDER_NOT_FOUND":
      return "There is no such order.";
    case "NOT_REFUNDABLE":
      return "This order cannot be refunded.";
    default:
      return f.message || "Something went wrong. Try again.";
  }
}

// The staff session's end. The first answer, from any call, that refuses the admin
// token itself (UNAUTHENTICATED with a TOKEN_* reason: expired, invalid, missing), or
// that refuses it for want of a role when it grants no staff role at all, ends the
// session once: the console stops, forgets the token and asks for a sign-in again with
// one notice. Calls the ended session still makes are refused in the page.

import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { failure, type Failure } from "../errors.js";
import { tag } from "./problem.js";
import type { Staff } from "./staff.js";

/** The roles the console is for. */
const STAFF_ROLES = ["box_office", "sre"];

/** Why a session ended, as the sign-in shows it. */
export interface Ended {
  text: string;
  /** The refusal's reason, e.g. `TOKEN_EXPIRED`. */
  reason: string;
  /** Its code and reason, e.g. `UNAUTHENTICATED/TOKEN_EXPIRED`. */
  tag: string;
}

/** Whether `staff`'s token claims a role the console is for (read, not verified). */
export function hasStaffRole(staff: Staff): boolean {
  return staff.roles.some((r) => STAFF_ROLES.includes(r));
}

export class StaffSession {
  private readonly controller = new AbortController();
  /** Aborted once the session has ended. */
  readonly signal = this.controller.signal;

  /** Watches the calls made with `staff`'s token; `onEnd` runs once, when it is refused. */
  constructor(
    private readonly staff: Staff,
    private readonly onEnd: (ended: Ended) => void,
  ) {}

  /** Watches every answer; refuses calls once the session has ended. */
  readonly interceptor: Interceptor = (next) => async (request) => {
    if (this.signal.aborted) throw new ConnectError("the staff session has ended", Code.Canceled);
    try {
      return await next(request);
    } catch (e) {
      this.check(failure(e));
      throw e;
    }
  };

  private check(f: Failure): void {
    if (this.signal.aborted) return;
    const tokenRefused = Number(f.code) === Code.Unauthenticated && f.reason.startsWith("TOKEN_");
    const notStaff = !hasStaffRole(this.staff);
    if (!tokenRefused && !(notStaff && f.reason === "ROLE_REQUIRED")) return;
    this.controller.abort();
    // A token that can be read, naming someone but no staff role: a fan's session, say.
    const text =
      notStaff && this.staff.name !== ""
        ? "This is not a staff token: sign in again as staff."
        : "Your staff session ended or was refused: sign in again.";
    this.onEnd({ text, reason: f.reason, tag: tag(f) });
  }
}

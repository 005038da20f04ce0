// Staff sign-in. Development: a name and a role buy an admin token from the runner's
// development issuer (POST `dev_staff_sign_in`). Production: the site's staff sign-in
// opens the console with the admin token in the address fragment (`#session=<token>`),
// kept for the tab only, as the fan's page keeps the fan's session (token.ts). A
// session the services refused (session.ts) comes back here with one notice saying so.

import type { PageConfig } from "../config.js";
import { h, show } from "../dom.js";
import { claims, dropToken, keepToken, tabToken } from "../token.js";
import { CALL_TIMEOUT_MS } from "./clients.js";
import type { Ended } from "./session.js";

/** A signed-in staff member. */
export interface Staff {
  token: string;
  /** The token's `sub`: who is signed in. */
  name: string;
  /** The roles the token grants, e.g. `box_office`, `sre`. */
  roles: string[];
}

/** The roles a staff member may sign in with in development mode, as the issuer names them. */
const ROLES = [
  { value: "box_office", label: "Box office" },
  { value: "sre", label: "SRE" },
];

const STORE = "stadium.staff-session";

function staff(token: string): Staff {
  const { sub, roles } = claims(token);
  return { token, name: sub, roles };
}

/** "Box office", "SRE": how the console names a role. */
export function roleLabel(role: string): string {
  return ROLES.find((r) => r.value === role)?.label ?? role;
}

/** Forgets the tab's admin token (signing out, or a token the services refused). */
export function signOut(): void {
  dropToken(STORE);
}

/** Why the last session ended, above the sign-in: the one notice of a refused token. */
function endedNotice(ended: Ended | undefined): HTMLElement | null {
  if (!ended) return null;
  return h(
    "div",
    { id: "staff-session-ended", class: "card error", role: "alert", "data-reason": ended.reason },
    h("p", {}, ended.text, ended.tag ? h("span", { class: "muted" }, ` (${ended.tag})`) : null),
  );
}

/**
 * Resolves once a staff member is signed in: with the tab's token when there is one,
 * else through the sign-in, headed by `ended` when a refused session led there.
 */
export function signInStaff(config: PageConfig, ended?: Ended): Promise<Staff> {
  const current = tabToken(STORE);
  if (current) return Promise.resolve(staff(current));
  const notice = endedNotice(ended);
  return new Promise((resolve) => {
    if (!config.dev_staff_sign_in) {
      show(
        "Sign in",
        h("h2", {}, "Staff sign-in"),
        ...(notice ? [notice] : []),
        h(
          "p",
          { id: "staff-token-needed" },
          "The console needs a staff token: sign in on the site's staff sign-in, which opens the console for you.",
        ),
      );
      // The staff sign-in may send this tab back with a token in the fragment (no reload).
      const arrived = () => {
        const token = tabToken(STORE);
        if (!token) return;
        window.removeEventListener("hashchange", arrived);
        resolve(staff(token));
      };
      window.addEventListener("hashchange", arrived);
      return;
    }
    const endpoint = config.dev_staff_sign_in;
    const error = h("p", { id: "staff-sign-in-error", class: "error", role: "alert" });
    const name = h("input", {
      id: "staff-name",
      name: "name",
      type: "text",
      autocomplete: "name",
      required: true,
      maxlength: 64,
      "aria-describedby": "staff-sign-in-hint staff-sign-in-error",
    });
    const role = h(
      "select",
      { id: "staff-role", name: "role" },
      ...ROLES.map((r) => h("option", { value: r.value }, r.label)),
    );
    const submit = h("button", { type: "submit" }, "Sign in");
    const form = h(
      "form",
      { class: "card" },
      h("div", { class: "field" }, h("label", { for: "staff-name" }, "Your name"), name),
      h("div", { class: "field" }, h("label", { for: "staff-role" }, "Role"), role),
      h(
        "p",
        { id: "staff-sign-in-hint", class: "muted" },
        "Development mode: any name signs you in as that staff member, with the role you choose.",
      ),
      submit,
      error,
    );
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      submit.disabled = true;
      void (async () => {
        error.textContent = "";
        try {
          const response = await fetch(endpoint, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ name: name.value, role: role.value }),
            signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
          });
          const body = (await response.json().catch(() => ({}))) as { token?: string; error?: string };
          if (!response.ok || !body.token) {
            error.textContent = body.error ?? `Sign-in failed (${response.status}).`;
            return;
          }
          keepToken(STORE, body.token);
          resolve(staff(body.token));
        } catch (e) {
          const late = e instanceof DOMException && e.name === "TimeoutError";
          error.textContent = late
            ? "Sign-in failed: the sign-in service did not answer in time."
            : `Sign-in failed: ${e instanceof Error ? e.message : String(e)}.`;
        } finally {
          submit.disabled = false;
        }
      })();
    });
    show("Sign in", h("h2", {}, "Staff sign-in"), ...(notice ? [notice] : []), form);
  });
}

// Signing in. Development: a name buys a fan session from the runner's development
// issuer. Production: the site that signs fans in opens this page with its session
// token in the address fragment (`#session=<token>`, never sent to any server); the
// page keeps it for the tab and removes it from the address (token.ts).

import type { PageConfig } from "./config.js";
import { h, show } from "./dom.js";
import { claims, dropToken, keepToken, tabToken } from "./token.js";

/** A signed-in fan. */
export interface Session {
  token: string;
  fanId: string;
}

const STORE = "stadium.session";

function remember(token: string): Session {
  keepToken(STORE, token);
  return { token, fanId: claims(token).sub };
}

/** Forgets the tab's session (an expired or refused token). */
export function forget(): void {
  dropToken(STORE);
}

/** The tab's session, from the address fragment or the tab's storage. */
function existing(): Session | null {
  const token = tabToken(STORE);
  return token ? { token, fanId: claims(token).sub } : null;
}

/** Resolves once the fan is signed in. */
export function signIn(config: PageConfig): Promise<Session> {
  const current = existing();
  if (current) return Promise.resolve(current);
  return new Promise((resolve) => {
    if (!config.dev_sign_in) {
      show(
        "Sign in",
        h("h2", {}, "Sign in"),
        h("p", {}, "Sign in on the ticket site first; it brings you back here."),
      );
      return;
    }
    const endpoint = config.dev_sign_in;
    const error = h("p", { id: "sign-in-error", class: "error", role: "alert" });
    const name = h("input", {
      id: "fan-name",
      name: "name",
      type: "text",
      autocomplete: "nickname",
      required: true,
      maxlength: 64,
      "aria-describedby": "sign-in-hint sign-in-error",
    });
    const form = h(
      "form",
      { class: "card" },
      h("label", { for: "fan-name" }, "Your name"),
      name,
      h(
        "p",
        { id: "sign-in-hint", class: "muted" },
        "Development mode: any name signs you in as that fan.",
      ),
      h("button", { type: "submit" }, "Sign in"),
      error,
    );
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      void (async () => {
        error.textContent = "";
        const response = await fetch(endpoint, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ name: name.value }),
        });
        const body = (await response.json().catch(() => ({}))) as {
          token?: string;
          error?: string;
        };
        if (!response.ok || !body.token) {
          error.textContent = body.error ?? `Sign-in failed (${response.status}).`;
          return;
        }
        resolve(remember(body.token));
      })();
    });
    show("Sign in", h("h2", {}, "Sign in"), form);
  });
}

// Tokens kept for the tab, shared by the fan's page and the staff console. The site
// that signs people in opens a page with its token in the address fragment
// (`#session=<token>`, never sent to any server); the page keeps it in the tab's
// storage (`sessionStorage`) and removes it from the address. What a page shows of a
// token (who, which roles) is read without verifying it: the services verify it.

/** What a page shows of a token. */
export interface Claims {
  /** The `sub`: the fan's id or the staff member's name. */
  sub: string;
  /** The `roles` of an admin token; empty for a fan's session. */
  roles: string[];
}

/** The claims of a JWT, read without verifying; empty ones when it cannot be read. */
export function claims(token: string): Claims {
  try {
    const payload = token.split(".")[1] ?? "";
    const binary = atob(payload.replace(/-/g, "+").replace(/_/g, "/"));
    const json = new TextDecoder().decode(Uint8Array.from(binary, (c) => c.charCodeAt(0)));
    const body = JSON.parse(json) as { sub?: unknown; roles?: unknown };
    const roles = Array.isArray(body.roles) ? body.roles.filter((r): r is string => typeof r === "string") : [];
    return { sub: typeof body.sub === "string" ? body.sub : "", roles };
  } catch {
    return { sub: "", roles: [] };
  }
}

/** Keeps `token` for the tab under `key`. */
export function keepToken(key: string, token: string): void {
  sessionStorage.setItem(key, token);
}

/** Forgets the tab's token under `key` (an expired or refused token, a sign-out). */
export function dropToken(key: string): void {
  sessionStorage.removeItem(key);
}

/**
 * The tab's token under `key`: the address fragment's `session` (kept, and removed
 * from the address), else the one kept before; null when there is neither.
 */
export function tabToken(key: string): string | null {
  const fragment = new URLSearchParams(window.location.hash.slice(1));
  const fromSite = fragment.get("session");
  if (fromSite) {
    history.replaceState(null, "", window.location.pathname + window.location.search);
    keepToken(key, fromSite);
    return fromSite;
  }
  return sessionStorage.getItem(key);
}

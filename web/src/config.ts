// What the pages learn from the server that serves them: the services' addresses, the
// event on sale, and how fans and staff sign in (GET /config.json).

/** The runner's page configuration, as served at `/config.json`. */
export interface PageConfig {
  /** "development" or "production". */
  mode: string;
  /** The event the page sells, unless the address names one (`?event=`). */
  event_id: string | null;
  /** gRPC-web base URLs of the services the pages call. */
  services: {
    waiting_room: string;
    seat_map: string;
    holds: string;
    payments: string;
    /** The box office: the staff console's. */
    box_office: string;
  };
  /** Development only: where a name buys a fan session (POST, JSON `{ "name" }`). */
  dev_sign_in: string | null;
  /**
   * Development only: where a name and a role buy a staff member's admin token
   * (POST, JSON `{ "name", "role" }`; the console's sign-in).
   */
  dev_staff_sign_in: string | null;
}

/** Reads `/config.json`; throws when the server does not answer with one. */
export async function loadConfig(): Promise<PageConfig> {
  const response = await fetch("/config.json", { cache: "no-store" });
  if (!response.ok) {
    throw new Error(`the page's configuration is unavailable (${response.status})`);
  }
  return (await response.json()) as PageConfig;
}

/** The event to sell: `?event=` in the address, else the configured one. */
export function eventId(config: PageConfig): string | null {
  const fromAddress = new URLSearchParams(window.location.search).get("event");
  return fromAddress && fromAddress.trim() !== "" ? fromAddress.trim() : config.event_id;
}

/**
 * The fan's presale code, from `?code=` in the address (a fan club's link carries it,
 * or the page puts it there): the fan then queues in the event's presale queue and
 * claims the seats set aside for the code. `null` without one.
 */
export function presaleCode(): string | null {
  const code = new URLSearchParams(window.location.search).get("code");
  return code && code.trim() !== "" ? code.trim() : null;
}

/** The waiting room's name of `event`'s presale queue (`42-presale`). */
export function presaleQueue(event: string): string {
  return `${event}-presale`;
}

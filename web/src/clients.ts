// The generated v1 clients over gRPC-web, each carrying the fan's session token; the
// bearer transport is the staff console's too (console/clients.ts), which adds a
// deadline to every call (the fan's calls have none: the queue's stream stays open).

import { createClient, type Client, type Interceptor, type Transport } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { WaitingRoom } from "./gen/stadium/waiting_room/v1/waiting_room_pb.js";
import { SeatMap } from "./gen/stadium/seat_map/v1/seat_map_pb.js";
import { Holds } from "./gen/stadium/holds/v1/holds_pb.js";
import { Payments } from "./gen/stadium/payments/v1/payments_pb.js";
import type { PageConfig } from "./config.js";

/** One client per service the fan talks to. */
export interface Clients {
  waitingRoom: Client<typeof WaitingRoom>;
  seatMap: Client<typeof SeatMap>;
  holds: Client<typeof Holds>;
  payments: Client<typeof Payments>;
}

/** What a page may add to its transports: a deadline for every call, more interceptors. */
export interface TransportOptions {
  /** Each call's deadline unless the call sets its own; none when unset. */
  defaultTimeoutMs?: number;
  /** Interceptors run after the bearer's (e.g. watching every answer). */
  interceptors?: Interceptor[];
}

/** gRPC-web transports to a service's base URL, each call carrying `token` as bearer. */
export function bearerTransport(token: string, options: TransportOptions = {}): (baseUrl: string) => Transport {
  const bearer: Interceptor = (next) => async (request) => {
    request.header.set("authorization", `Bearer ${token}`);
    return next(request);
  };
  const interceptors = [bearer, ...(options.interceptors ?? [])];
  return (baseUrl) => createGrpcWebTransport({ baseUrl, interceptors, defaultTimeoutMs: options.defaultTimeoutMs });
}

/** Clients for the configured services, authenticated as the session's fan. */
export function clients(config: PageConfig, sessionToken: string): Clients {
  const transport = bearerTransport(sessionToken);
  return {
    waitingRoom: createClient(WaitingRoom, transport(config.services.waiting_room)),
    seatMap: createClient(SeatMap, transport(config.services.seat_map)),
    holds: createClient(Holds, transport(config.services.holds)),
    payments: createClient(Payments, transport(config.services.payments)),
  };
}

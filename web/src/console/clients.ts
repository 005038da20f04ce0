// The generated v1 clients the staff console calls over gRPC-web, each call carrying
// the staff member's admin token (which every service accepts for its admin calls)
// and a deadline, so that a service that never answers cannot hold the console up.

import { createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { BoxOffice } from "../gen/stadium/box_office/v1/box_office_pb.js";
import { WaitingRoom } from "../gen/stadium/waiting_room/v1/waiting_room_pb.js";
import { Payments } from "../gen/stadium/payments/v1/payments_pb.js";
import { bearerTransport } from "../clients.js";
import type { PageConfig } from "../config.js";

/** Every console call's deadline unless it sets its own (actions, orders, the canary). */
export const CALL_TIMEOUT_MS = 10_000;

/** The deadline of the dashboard's reads, which come again every second. */
export const READ_TIMEOUT_MS = 4_000;

/** One client per service the console talks to. */
export interface StaffClients {
  boxOffice: Client<typeof BoxOffice>;
  waitingRoom: Client<typeof WaitingRoom>;
  payments: Client<typeof Payments>;
}

/** Clients for the configured services, authenticated with the admin token; `watch` sees every call. */
export function staffClients(config: PageConfig, adminToken: string, watch: Interceptor): StaffClients {
  const transport = bearerTransport(adminToken, { defaultTimeoutMs: CALL_TIMEOUT_MS, interceptors: [watch] });
  return {
    boxOffice: createClient(BoxOffice, transport(config.services.box_office)),
    waitingRoom: createClient(WaitingRoom, transport(config.services.waiting_room)),
    payments: createClient(Payments, transport(config.services.payments)),
  };
}

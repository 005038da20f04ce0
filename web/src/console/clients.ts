// The generated v1 clients the staff console calls over gRPC-web, each call carrying
// the staff member's admin token (which every service accepts for its admin calls).

import { createClient, type Client } from "@connectrpc/connect";
import { BoxOffice } from "../gen/stadium/box_office/v1/box_office_pb.js";
import { WaitingRoom } from "../gen/stadium/waiting_room/v1/waiting_room_pb.js";
import { Payments } from "../gen/stadium/payments/v1/payments_pb.js";
import { bearerTransport } from "../clients.js";
import type { PageConfig } from "../config.js";

/** One client per service the console talks to. */
export interface StaffClients {
  boxOffice: Client<typeof BoxOffice>;
  waitingRoom: Client<typeof WaitingRoom>;
  payments: Client<typeof Payments>;
}

/** Clients for the configured services, authenticated with the admin token. */
export function staffClients(config: PageConfig, adminToken: string): StaffClients {
  const transport = bearerTransport(adminToken);
  return {
    boxOffice: createClient(BoxOffice, transport(config.services.box_office)),
    waitingRoom: createClient(WaitingRoom, transport(config.services.waiting_room)),
    payments: createClient(Payments, transport(config.services.payments)),
  };
}

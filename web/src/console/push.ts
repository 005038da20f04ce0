// What became of a change the box office had to tell the waiting room (its answers'
// WaitingRoomPush), in words, when it was not delivered.

import { PushOutcome, type WaitingRoomPush } from "../gen/stadium/box_office/v1/box_office_pb.js";
import { enumName, words } from "./format.js";

/** "" when delivered; else a sentence saying what became of the push. */
export function pushNote(push: WaitingRoomPush | undefined): string {
  if (!push || push.outcome === PushOutcome.DELIVERED) return "";
  const outcome = words(enumName(PushOutcome, push.outcome) || "unknown").toLowerCase();
  const detail = push.detail ? `: ${push.detail}` : "";
  const retried = push.outcome === PushOutcome.FAILED ? " and the push is retried in the background" : "";
  return ` The waiting room was not told (${outcome}${detail}); the change is stored${retried}.`;
}

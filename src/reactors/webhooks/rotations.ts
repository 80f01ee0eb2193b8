import { idOf } from "../../../domain/streams.js";
import type { RecordedEvent } from "../../eventstore/port.js";
import { oneByOne } from "../reactor.js";

/** The one event the rotations reactor acts on. */
export const ROTATION_EVENTS: readonly string[] = ["WebhookSecretRotated"];

/** Makes a staged secret current (WebhookSecrets.promote). */
export type PromoteSecret = (agentId: string, rotationId: string, previousValidUntil: Date) => Promise<void>;

/**
 * The webhook rotations reactor's step (issue 23): each recorded rotation makes its staged secret
 * current. The request does so itself right after recording it; this covers a crash in between.
 * Promoting twice changes nothing, so the request and the reactor never undo each other.
 */
export function webhookRotations(promote: PromoteSecret) {
  return oneByOne(async (event: RecordedEvent) => {
    if (!ROTATION_EVENTS.includes(event.type)) return false;
    const { rotationId, previousValidUntil } = event.data as {
      rotationId?: string;
      previousValidUntil: string;
    };
    if (!rotationId) return false;
    await promote(idOf(event.streamId), rotationId, new Date(previousValidUntil));
    return true;
  });
}

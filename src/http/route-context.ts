import type { Position } from "../eventstore/port.js";
import type { Service } from "../service.js";
import type { EventStreams } from "./event-stream.js";
import type { Idempotency } from "./idempotency.js";

/** What route plugins receive: the service, and the read-your-writes wait. */
export interface RouteContext {
  service: Service;
  /** Waits (bounded) until the read models show the write at `position`, so the answer and any GET after it agree. */
  settle(position: Position | null): Promise<void>;
  /** Idempotency-Key for routes that read their own body (multipart uploads). */
  idempotency: Idempotency;
  /** The server-sent event streams open on this server (the inbox's), ended when it closes. */
  eventStreams: EventStreams;
}

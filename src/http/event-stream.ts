import { randomUUID } from "node:crypto";
import { PassThrough } from "node:stream";
import type { FastifyReply } from "fastify";
import { MemoryStreamSlots, type OpenStreamSlots } from "../rate-limits/open-streams.js";
import { OPEN_EVENT_STREAMS } from "../rate-limits/policy.js";
import { HttpError } from "./errors.js";

/** Decisions 8.4: a comment every 15 s keeps proxies and clients from taking the stream for dead. */
export const KEEP_ALIVE_MS = 15_000;
export const EVENT_STREAM = "text/event-stream";
const KEEP_ALIVE = ": keep-alive\n\n";

/**
 * One server-sent event. The data is JSON, whose text never holds a line break, so it is one
 * `data:` line; the id is an opaque position without one either.
 */
export function eventFrame(event: string, id: string, data: unknown): string {
  return `event: ${event}\nid: ${id}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** Whether an Accept header admits text/event-stream (no header admits anything). */
export function acceptsEventStream(accept: string | undefined): boolean {
  if (accept === undefined || accept.trim() === "") return true;
  return accept.split(",").some((range) => {
    const [type = "", ...params] = range.split(";").map((part) => part.trim().toLowerCase());
    const refused = params.some((param) => /^q=0(\.0*)?$/.test(param));
    return !refused && [EVENT_STREAM, "text/*", "*/*"].includes(type);
  });
}

/** 406 for a client that takes no event stream: it should read the inbox (GET /v1/transfers/inbox). */
export function requireEventStream(accept: string | undefined): void {
  if (!acceptsEventStream(accept)) {
    throw new HttpError(
      406,
      "NOT_ACCEPTABLE",
      "this endpoint answers text/event-stream only; GET /v1/transfers/inbox answers JSON",
    );
  }
}

/** An open stream: `send` writes a frame; `onEnd` runs once when it ends, whoever ends it. */
export interface EventStream {
  send(frame: string): void;
  end(): void;
  onEnd(cleanup: () => void): void;
}

/**
 * The event streams open on this server, counted per holder (the API key or session that opened
 * them; at most OPEN_EVENT_STREAMS.limit each, across every instance when the slots are in Redis,
 * src/rate-limits/open-streams.ts). Each sends a keep-alive comment at once (so the client
 * sees the answer start even with nothing to tell) and every `keepAliveMs` after; it ends when the
 * client goes away, when its route ends it, or when the server closes (`closeAll`, from the
 * preClose hook: a stream never ends by itself, so it would hold a shutdown for the whole grace
 * period; its client reconnects with Last-Event-ID, to another instance if need be).
 */
export class EventStreams {
  private readonly open = new Set<EventStream>();

  constructor(
    private readonly keepAliveMs: number = KEEP_ALIVE_MS,
    private readonly slots: OpenStreamSlots = new MemoryStreamSlots(),
  ) {}

  /**
   * Starts the answer on `reply` (200, text/event-stream) for `holder`; the route returns the
   * reply. Throws 429 RATE_LIMITED, with Retry-After, when the holder has its limit open already.
   */
  async start(reply: FastifyReply, holder: string): Promise<EventStream> {
    const id = randomUUID();
    const { limit, retryAfterSeconds } = OPEN_EVENT_STREAMS;
    if (!(await this.slots.take(holder, id, limit))) {
      reply.header("Retry-After", String(retryAfterSeconds));
      throw new HttpError(
        429,
        "RATE_LIMITED",
        `${limit} inbox event streams are open with this API key already; close one, or retry after ${retryAfterSeconds} s`,
      );
    }
    // A slot that cannot be given back now (Redis away) frees itself once its heartbeats stop.
    const release = () => void this.slots.release(holder, id).catch(() => {});
    const body = new PassThrough();
    const cleanups: (() => void)[] = [];
    let ended = false;
    const stream: EventStream = {
      send: (frame) => {
        if (!ended) body.write(frame);
      },
      end: () => {
        if (ended) return;
        ended = true;
        clearInterval(keepAlive);
        this.open.delete(stream);
        release();
        body.end();
        for (const cleanup of cleanups) cleanup();
      },
      onEnd: (cleanup) => {
        if (ended) cleanup();
        else cleanups.push(cleanup);
      },
    };
    const keepAlive = setInterval(() => stream.send(KEEP_ALIVE), this.keepAliveMs);
    this.open.add(stream);
    // The connection closing (the client gone, or the answer done) is the one signal that covers both.
    reply.raw.once("close", stream.end);
    // A client that went away while the route was still deciding closed before anyone listened.
    if (reply.raw.socket?.destroyed !== false) queueMicrotask(stream.end);
    stream.send(KEEP_ALIVE);
    // The request's own line comes when it ends, which for a stream may be hours away.
    reply.log.info({ req: reply.request }, "event stream opened");
    reply
      .status(200)
      .header("content-type", `${EVENT_STREAM}; charset=utf-8`)
      .header("cache-control", "no-store")
      // nginx and its kin would otherwise hold the events back in a buffer.
      .header("x-accel-buffering", "no")
      .send(body);
    return stream;
  }

  /** How many streams are open: none may outlive its client. */
  get size(): number {
    return this.open.size;
  }

  closeAll(): void {
    for (const stream of [...this.open]) stream.end();
  }
}

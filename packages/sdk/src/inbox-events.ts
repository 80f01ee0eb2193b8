import { setTimeout as sleep } from "node:timers/promises";
import { HandoffApiError, HandoffError } from "./errors.js";
import { serverSentEvents } from "./event-stream.js";
import { backoffMs } from "./http.js";
import type { InboxPage, Transfer } from "./types.js";

/** One transfer that reached the inbox, and the position to resume after it (null mid-page of a long-poll). */
export interface InboxArrival {
  transfer: Transfer;
  position: string | null;
}

export interface InboxEventsOptions {
  signal: AbortSignal;
  /** Start after this position (an event's id or an inbox page's `next_cursor`) instead of the inbox's start. */
  after?: string;
  /** The inbox could not be read; the loop goes on (backing off). */
  onError?: (error: Error) => void;
  /** How long a stream may stay silent before it counts as dead; default 45 s (three keep-alives). */
  silenceMs?: number;
}

export interface InboxEventsContext {
  /** GET /v1/transfers/inbox/events after `after`: the successful answer, its body unread. */
  openStream(options: { after?: string; signal: AbortSignal }): Promise<Response>;
  inbox(options: { wait: number; cursor?: string; signal: AbortSignal }): Promise<InboxPage>;
}

/** Decisions 8.4: the event the stream sends for each transfer. */
const TRANSFER_RECEIVED = "transfer.received";
/** The longest long-poll the API allows (decisions 3.11). */
const LONG_POLL_SECONDS = 30;
/** Credentials that no longer work do not heal by waiting: the loop stops on them. */
const FATAL_STATUSES = new Set([401, 403]);
/** A server without the stream (older, or behind a proxy that refuses it): long-poll for good. */
const NO_STREAM_STATUSES = new Set([404, 406]);
/**
 * The server sends a keep-alive comment every 15 s: a stream silent for this long is dead (a
 * connection lost without a word, a proxy that holds the bytes back) and is opened again.
 */
const SILENCE_MS = 45_000;

/**
 * Every transfer that reaches the inbox, in order, until `signal` aborts: from the event stream
 * (decisions 8.4), else from the long-poll. A stream that drops after it delivered is opened
 * again at once after the last event's id; one that cannot be opened (or drops with nothing
 * delivered) gives way to one long-poll round from the same position, then the stream is tried
 * again; a server that answers 404 or 406 is long-polled from then on. Event ids and page cursors
 * are the same positions, so no transfer is missed or repeated across the switches.
 */
export async function* inboxArrivals(
  context: InboxEventsContext,
  options: InboxEventsOptions,
): AsyncGenerator<InboxArrival> {
  const { signal } = options;
  let position = options.after;
  let streaming = true;
  let failures = 0;
  while (!signal.aborted) {
    if (streaming) {
      let delivered = false;
      try {
        for await (const arrival of streamed(context, position, signal, options.silenceMs ?? SILENCE_MS)) {
          delivered = true;
          position = arrival.position ?? position;
          yield arrival;
        }
      } catch (error) {
        if (signal.aborted) return;
        if (error instanceof HandoffApiError && FATAL_STATUSES.has(error.status)) throw error;
        if (error instanceof HandoffApiError && NO_STREAM_STATUSES.has(error.status)) streaming = false;
        else options.onError?.(error as Error);
      }
      if (delivered) continue;
    }
    let page: InboxPage;
    try {
      page = await context.inbox({
        wait: LONG_POLL_SECONDS,
        signal,
        ...(position ? { cursor: position } : {}),
      });
      failures = 0;
    } catch (error) {
      if (signal.aborted) return;
      if (error instanceof HandoffApiError && FATAL_STATUSES.has(error.status)) throw error;
      options.onError?.(error as Error);
      await sleep(Math.max(1000, backoffMs(++failures + 2)), undefined, { signal }).catch(() => undefined);
      continue;
    }
    for (const transfer of page.transfers) yield { transfer, position: null };
    position = page.next_cursor ?? position;
  }
}

/** One event stream's transfers, until it ends, fails, falls silent or `signal` aborts. */
async function* streamed(
  context: InboxEventsContext,
  after: string | undefined,
  signal: AbortSignal,
  silenceMs: number,
): AsyncGenerator<InboxArrival> {
  const own = new AbortController();
  const stop = () => own.abort();
  signal.addEventListener("abort", stop, { once: true });
  let watchdog = setTimeout(stop, silenceMs);
  const rearm = () => {
    clearTimeout(watchdog);
    watchdog = setTimeout(stop, silenceMs);
  };
  const silence = (cause?: unknown) =>
    new HandoffError("NETWORK_ERROR", `the inbox event stream was silent for ${silenceMs} ms`, { cause });
  try {
    const response = await context.openStream({ ...(after ? { after } : {}), signal: own.signal });
    if (!response.body || !response.headers.get("content-type")?.startsWith("text/event-stream")) {
      await response.body?.cancel();
      throw new HandoffApiError(406, "NOT_ACCEPTABLE", "the server answered the event stream with no events");
    }
    // Cancelled on abort too: a read ends then whether or not the fetch in use honours its signal.
    const reader = response.body.getReader();
    own.signal.addEventListener("abort", () => void reader.cancel().catch(() => undefined), { once: true });
    const chunks = async function* () {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        rearm();
        yield value;
      }
    };
    for await (const event of serverSentEvents(chunks())) {
      if (event.event !== TRANSFER_RECEIVED) continue;
      // The time the consumer takes with a transfer (a large download) is not the stream's silence.
      clearTimeout(watchdog);
      yield { transfer: JSON.parse(event.data) as Transfer, position: event.id };
      rearm();
    }
    if (own.signal.aborted && !signal.aborted) throw silence();
  } catch (error) {
    if (own.signal.aborted && !signal.aborted && !(error instanceof HandoffError)) throw silence(error);
    throw error;
  } finally {
    clearTimeout(watchdog);
    signal.removeEventListener("abort", stop);
    // The consumer stopped early, or the stream ended: either way the connection goes.
    own.abort();
  }
}

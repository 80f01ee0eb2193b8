import { type InboxEventsContext, inboxArrivals } from "./inbox-events.js";
import type { ReceiveResult } from "./receive.js";
import type { ShieldLevel } from "./shield/index.js";

export interface ListenOptions {
  outDir: string;
  shield?: ShieldLevel;
  signal: AbortSignal;
  /** Start after this inbox position (an inbox page's `next_cursor`, an event's id) instead of the inbox's start. */
  cursor?: string;
  onReceived?: (result: ReceiveResult) => void;
  /** A transfer that could not be received; it is skipped, never tried again by this loop. */
  onFailed?: (transferId: string, error: Error) => void;
  /** The inbox could not be read; the loop waits (backing off) and tries again. */
  onError?: (error: Error) => void;
}

export interface ListenContext extends InboxEventsContext {
  receive(transferId: string, options: { outDir: string; shield?: ShieldLevel }): Promise<ReceiveResult>;
}

/**
 * Receives each transfer once as it reaches the inbox (its event stream, else the long-poll: see
 * inbox-events.ts), until the signal aborts. A transfer already downloaded (downloads > 0) is not
 * new; one still `pending` (presigned, not confirmed) comes back to the inbox when it is confirmed.
 */
export async function listen(context: ListenContext, options: ListenOptions): Promise<void> {
  const { signal } = options;
  const seen = new Set<string>();
  const arrivals = inboxArrivals(context, {
    signal,
    ...(options.cursor ? { after: options.cursor } : {}),
    ...(options.onError ? { onError: options.onError } : {}),
  });
  for await (const { transfer } of arrivals) {
    if (signal.aborted) return;
    if (seen.has(transfer.id) || transfer.status !== "active" || transfer.downloads > 0) continue;
    seen.add(transfer.id);
    try {
      const result = await context.receive(transfer.id, {
        outDir: options.outDir,
        ...(options.shield ? { shield: options.shield } : {}),
      });
      options.onReceived?.(result);
    } catch (error) {
      options.onFailed?.(transfer.id, error as Error);
    }
  }
}

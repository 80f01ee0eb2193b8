import { setTimeout as sleep } from "node:timers/promises";
import { HandoffApiError } from "./errors.js";
import { backoffMs } from "./http.js";
import type { ReceiveResult } from "./receive.js";
import type { ShieldLevel } from "./shield/index.js";
import type { InboxPage } from "./types.js";

export interface ListenOptions {
  outDir: string;
  shield?: ShieldLevel;
  signal: AbortSignal;
  /** Start after this inbox cursor (from a previous inbox answer) instead of the inbox's start. */
  cursor?: string;
  onReceived?: (result: ReceiveResult) => void;
  /** A transfer that could not be received; it is skipped, never tried again by this loop. */
  onFailed?: (transferId: string, error: Error) => void;
  /** The inbox could not be read; the loop waits (backing off) and tries again. */
  onError?: (error: Error) => void;
}

export interface ListenContext {
  inbox(options: { wait: number; cursor?: string; signal: AbortSignal }): Promise<InboxPage>;
  receive(transferId: string, options: { outDir: string; shield?: ShieldLevel }): Promise<ReceiveResult>;
}

/** The longest long-poll the API allows (decisions 3.11). */
const LONG_POLL_SECONDS = 30;
/** Credentials that no longer work do not heal by waiting: listen stops on them. */
const FATAL_STATUSES = new Set([401, 403]);

/**
 * Long-polls the inbox from its cursor and receives each transfer once as it arrives, until the
 * signal aborts. A transfer already downloaded (downloads > 0) is not new; one still `pending`
 * (presigned, not confirmed) comes back to the inbox when it is confirmed.
 */
export async function listen(context: ListenContext, options: ListenOptions): Promise<void> {
  const { signal } = options;
  const seen = new Set<string>();
  let cursor = options.cursor;
  let failures = 0;
  while (!signal.aborted) {
    let page: InboxPage;
    try {
      page = await context.inbox({ wait: LONG_POLL_SECONDS, signal, ...(cursor ? { cursor } : {}) });
      failures = 0;
    } catch (error) {
      if (signal.aborted) return;
      if (error instanceof HandoffApiError && FATAL_STATUSES.has(error.status)) throw error;
      options.onError?.(error as Error);
      await sleep(Math.max(1000, backoffMs(++failures + 2)), undefined, { signal }).catch(() => undefined);
      continue;
    }
    for (const transfer of page.transfers) {
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
    cursor = page.next_cursor ?? cursor;
  }
}

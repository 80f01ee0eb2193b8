import { streams } from "../../domain/streams.js";
import { transferDecider } from "../../domain/transfer.js";
import type { BlobStore } from "../blobs/port.js";
import { load } from "../command-handlers/streams.js";
import type { EventStore } from "../eventstore/port.js";

/** Where transfers' blobs live: `transfers/{transferId}/{fileId}` (src/blobs/keys.ts). */
const TRANSFERS = "transfers";

/**
 * How long a transfer's blobs may sit without their transfer while this process runs: a
 * multipart upload stores every file before it creates the transfer, and the gap between its
 * last file and the append is short, but never zero.
 */
export const LEFTOVER_GRACE_MS = 60_000;

export interface LeftoversSwept {
  parts: number;
  orphans: number;
}

/**
 * Removes what a crash (kill -9, power loss) leaves in the blob store, so that storage converges
 * to what the log says:
 * - temporary files of puts that no longer run;
 * - a transfer's blobs when the log has no such transfer (a multipart upload cut off after some
 *   files) or says its files were deleted (an upload that finished after a purge).
 * Blobs written before this process started cannot belong to an upload in progress; newer ones
 * must also be older than LEFTOVER_GRACE_MS with no put of theirs running. The log, not a read
 * model, decides: after a crash the read models may lag it.
 */
export async function sweepLeftovers(
  store: EventStore,
  blobs: BlobStore,
  startedAtMs: number,
  nowMs: number,
): Promise<LeftoversSwept> {
  const scan = blobs.leftovers;
  if (!scan) return { parts: 0, orphans: 0 };
  const parts = await scan.removeAbandonedParts();
  let orphans = 0;
  for (const group of await scan.groups(TRANSFERS)) {
    const settled = group.newestWriteMs < startedAtMs || group.newestWriteMs < nowMs - LEFTOVER_GRACE_MS;
    if (group.writing || !settled) continue;
    const { state } = await load(store, transferDecider, streams.transfer(group.name));
    if (state.status !== "none" && !state.filesDeleted) continue;
    await blobs.delete(group.keys);
    orphans += 1;
  }
  return { parts, orphans };
}

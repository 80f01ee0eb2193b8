import v8 from "node:v8";

/**
 * A download streams through short-lived buffers, 64 KiB each and gigabytes of them: the network
 * chunks, and for an encrypted file the decrypted records too. Node 20's V8 frees dead buffers on a
 * background thread after each young-generation collection, and until that thread is done their
 * bytes still count as live external memory, so V8 starts a full marking cycle after nearly every
 * such collection: 98 full collections in a 1 GiB encrypted receive (62 plain), whose concurrent
 * marking took about a fifth of the receive's CPU time. Freed within the collection, the buffers
 * no longer count by then: 1 to 12 full collections, and about 1.2 s (plain 0.7 s) less user CPU per
 * GiB received (bench/client-transfer.ts). An internal V8 flag, like the server's heap growth in
 * server-cli.ts: re-check on Node upgrades (the bench shows it).
 */
const SWEEP_BUFFERS_IN_COLLECTION = "--no-concurrent-array-buffer-sweeping";

/** For the commands that download files (receive, listen, mcp); process-wide, set once at start. */
export function tuneHeapForDownloads(): void {
  v8.setFlagsFromString(SWEEP_BUFFERS_IN_COLLECTION);
}

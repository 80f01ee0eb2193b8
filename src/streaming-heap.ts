import v8 from "node:v8";

/**
 * Files stream through short-lived buffers, gigabytes of them: the network's chunks, the blob
 * store's 1 MiB reads and writes, and on a client the decrypted records. Node 20's V8 frees dead
 * buffers on a background thread after each young-generation collection, and until that thread is
 * done their bytes still count as live external memory, so V8 starts a full marking cycle after
 * nearly every such collection, whose concurrent marking then takes a large share of the process's
 * CPU. Freed within the collection, the buffers no longer count by then (bench/, 1 GiB):
 *
 * - the server: per GiB uploaded 2.4 s of CPU became 1.1 s (the fair baseline's 0.9), and per GiB
 *   downloaded 1.5 s became 0.5 s; small transfers are unchanged;
 * - `handoff receive`: 98 full collections became 1 to 12 (62 for a plain receive), and the user CPU
 *   fell by about 1.2 s per GiB (0.7 s plain).
 *
 * An internal V8 flag, like the server's heap growth (server-cli.ts): re-check on Node upgrades
 * (the benchmarks show it). Set by the programs, never by the SDK: a library does not set
 * process-wide V8 flags.
 */
const SWEEP_BUFFERS_IN_COLLECTION = "--no-concurrent-array-buffer-sweeping";

/** For the processes that stream files (the server; receive, listen, mcp): set once, at start. */
export function tuneHeapForStreaming(): void {
  v8.setFlagsFromString(SWEEP_BUFFERS_IN_COLLECTION);
}

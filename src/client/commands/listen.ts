import { mkdir } from "node:fs/promises";
import { resolve } from "node:path";
import { tuneHeapForStreaming } from "../../streaming-heap.js";
import { agentClient } from "../environment.js";
import { describeError } from "../errors.js";
import { required, shieldOption } from "../options.js";
import { printJsonLine, warn } from "../output.js";
import { blockedFiles, blockedLine } from "../shield-report.js";
import { inSpecOrder } from "./receive.js";

/**
 * `handoff listen --identity FILE --out DIR [--shield LEVEL]` (decisions 5.5, 5.6): receives each
 * new transfer as it arrives and prints its result as one JSON line; a failed transfer and each
 * blocked file get a stderr line and listening goes on. SIGINT or SIGTERM ends it with exit 0.
 */
export async function listen(values: { identity?: string; out?: string; shield?: string }): Promise<number> {
  tuneHeapForStreaming();
  const identity = required(values.identity, "--identity FILE");
  const outDir = resolve(required(values.out, "--out DIR"));
  const shield = shieldOption(values.shield);
  const client = await agentClient(identity, "cli");
  await mkdir(outDir, { recursive: true });

  const stop = new AbortController();
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => stop.abort());
  warn(`listening for transfers into ${outDir}; SIGINT or SIGTERM stops`);
  await client.listen({
    outDir,
    shield,
    signal: stop.signal,
    onReceived(result) {
      printJsonLine(inSpecOrder(result));
      for (const file of blockedFiles(result.files)) warn(blockedLine(result.transfer_id, [file]));
    },
    onFailed(transferId, error) {
      warn(`${transferId}: skipped, ${describeError(error)}`);
    },
    onError(error) {
      warn(`reading the inbox failed, trying again: ${describeError(error)}`);
    },
  });
  return 0;
}

import { existsSync } from "node:fs";
import { rmdir } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import type { HandoffClient, ReceiveOptions, ReceiveResult } from "@handoff/sdk";
import { UsageError } from "../../cli-errors.js";
import { tuneHeapForStreaming } from "../../streaming-heap.js";
import { agentClient } from "../environment.js";
import { describeError } from "../errors.js";
import { required, shieldOption } from "../options.js";
import { printJson, warn } from "../output.js";
import { withProgressBars } from "../progress.js";
import { blockedFiles, blockedLine, EXIT_BLOCKED } from "../shield-report.js";

/**
 * Receives a transfer into `outDir` (the SDK creates it when missing). On failure the SDK has
 * removed the files it wrote; folders it made for them go too, so a failed receive leaves nothing.
 */
export async function receiveInto(client: HandoffClient, transferId: string, options: ReceiveOptions) {
  const made = outermostMissing(options.outDir);
  try {
    return inSpecOrder(await client.receive(transferId, options));
  } catch (error) {
    if (made) await removeEmptyFolders(options.outDir, made);
    throw error;
  }
}

/** The result with each file's fields in the order of decisions 5.6: name, path, size, shield. */
export function inSpecOrder(result: ReceiveResult): ReceiveResult {
  return {
    transfer_id: result.transfer_id,
    files: result.files.map(({ name, path, size, shield }) => ({
      name,
      ...(path ? { path } : {}),
      size,
      shield,
    })),
  };
}

/** The outermost folder on the way to `dir` that does not exist yet; null when `dir` exists. */
function outermostMissing(dir: string): string | null {
  let missing: string | null = null;
  for (let current = dir; !existsSync(current); current = dirname(current)) {
    missing = current;
    if (dirname(current) === current) break;
  }
  return missing;
}

/** Removes `dir` and its parents up to `top`, as long as each is empty. */
async function removeEmptyFolders(dir: string, top: string): Promise<void> {
  for (let current = dir; ; current = dirname(current)) {
    try {
      await rmdir(current);
    } catch {
      return;
    }
    if (current === top) return;
  }
}

/**
 * `handoff receive TRANSFER_ID --identity FILE [--out DIR] [--shield LEVEL] [--accept-rotation]`
 * (decisions 5.5, 5.6): prints `{transfer_id, files}`; exit 3 with one stderr line when Shield
 * blocked a file.
 */
export async function receive(
  values: { identity?: string; out?: string; shield?: string; acceptRotation?: boolean; receipt?: boolean },
  positionals: string[],
): Promise<number> {
  tuneHeapForStreaming();
  const identity = required(values.identity, "--identity FILE");
  const transferId = required(positionals[0], "TRANSFER_ID");
  if (positionals.length > 1) throw new UsageError(`one TRANSFER_ID only, got: ${positionals.join(" ")}`);
  const shield = shieldOption(values.shield);
  const client = await agentClient(identity, "cli");
  const result = await withProgressBars(({ onProgress }) =>
    receiveInto(client, transferId, {
      outDir: resolve(values.out ?? "."),
      shield,
      acceptRotation: values.acceptRotation,
      receipt: values.receipt ?? true,
      onReceipt: (outcome) => {
        if ("error" in outcome) warn(`the receipt was not recorded: ${describeError(outcome.error)}`);
      },
      onProgress,
    }),
  );
  printJson(result);
  const blocked = blockedFiles(result.files);
  if (blocked.length === 0) return 0;
  warn(blockedLine(result.transfer_id, blocked));
  return EXIT_BLOCKED;
}

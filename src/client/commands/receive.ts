import { mkdir, rmdir } from "node:fs/promises";
import { resolve } from "node:path";
import type { HandoffClient, ShieldLevel } from "@handoff/sdk";
import { agentClient } from "../environment.js";
import { UsageError } from "../errors.js";
import { parseCommandArgs, required, shieldOption } from "../options.js";
import { printJson, warn } from "../output.js";
import { withProgressBars } from "../progress.js";
import { blockedFiles, blockedLine, EXIT_BLOCKED } from "../shield-report.js";

/**
 * Receives a transfer into `outDir`, created when missing. On failure the SDK has removed what
 * it wrote; a folder made here for it goes too, so a failed receive leaves nothing behind.
 */
export async function receiveInto(
  client: HandoffClient,
  transferId: string,
  options: {
    outDir: string;
    shield: ShieldLevel | undefined;
    onProgress?: Parameters<HandoffClient["receive"]>[1]["onProgress"];
  },
) {
  const made = await mkdir(options.outDir, { recursive: true });
  try {
    return await client.receive(transferId, options);
  } catch (error) {
    if (made) await rmdir(made).catch(() => {});
    throw error;
  }
}

/**
 * `handoff receive TRANSFER_ID --identity FILE [--out DIR] [--shield LEVEL]` (decisions 5.5, 5.6):
 * prints `{transfer_id, files}`; exit 3 with one stderr line when Shield blocked a file.
 */
export async function receive(args: string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs(
    args,
    { identity: { type: "string" }, out: { type: "string" }, shield: { type: "string" } },
    true,
  );
  const identity = required(values.identity, "--identity FILE");
  const transferId = required(positionals[0], "TRANSFER_ID");
  if (positionals.length > 1) throw new UsageError(`one TRANSFER_ID only, got: ${positionals.join(" ")}`);
  const shield = shieldOption(values.shield);
  const client = await agentClient(identity, "cli");
  const result = await withProgressBars(({ onProgress }) =>
    receiveInto(client, transferId, { outDir: resolve(values.out ?? "."), shield, onProgress }),
  );
  printJson(result);
  const blocked = blockedFiles(result.files);
  if (blocked.length === 0) return 0;
  warn(blockedLine(result.transfer_id, blocked));
  return EXIT_BLOCKED;
}

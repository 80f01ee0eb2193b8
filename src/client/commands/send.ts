import { resolve } from "node:path";
import { UsageError } from "../../cli-errors.js";
import { agentClient } from "../environment.js";
import { integerOption, parseCommandArgs, required } from "../options.js";
import { printJson } from "../output.js";
import { withProgressBars } from "../progress.js";

/**
 * `handoff send --identity FILE --to RECIPIENT [--account A] [--message M] [--max-downloads N]
 * [--expires-in 24h] [--plain] [--accept-rotation] PATH...` (decisions 5.5): prints the transfer the
 * API answers. --accept-rotation takes a recipient's changed keys instead of refusing them (pinning).
 */
export async function send(args: string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs(
    args,
    {
      identity: { type: "string" },
      to: { type: "string" },
      account: { type: "string" },
      message: { type: "string" },
      "max-downloads": { type: "string" },
      "expires-in": { type: "string" },
      plain: { type: "boolean" },
      "accept-rotation": { type: "boolean" },
    },
    true,
  );
  const identity = required(values.identity, "--identity FILE");
  const to = required(values.to, "--to RECIPIENT");
  if (positionals.length === 0) throw new UsageError("give at least one PATH to send");
  const maxDownloads = integerOption(values["max-downloads"], "--max-downloads", 1, 1000);
  const client = await agentClient(identity, "cli");
  const transfer = await withProgressBars(({ onProgress }) =>
    client.send({
      to,
      paths: positionals.map((path) => resolve(path)),
      account: values.account,
      message: values.message,
      maxDownloads,
      expiresIn: values["expires-in"],
      plain: values.plain,
      acceptRotation: values["accept-rotation"],
      onProgress,
    }),
  );
  printJson(transfer);
  return 0;
}

import { resolve } from "node:path";
import { UsageError } from "../../cli-errors.js";
import { agentClient } from "../environment.js";
import { integerOption, required } from "../options.js";
import { printJson, warn } from "../output.js";
import { withProgressBars } from "../progress.js";

/**
 * `handoff send --identity FILE --to RECIPIENT [--account A] [--message M] [--max-downloads N]
 * [--expires-in 24h] [--plain] [--accept-rotation] PATH...` (decisions 5.5): prints the transfer the
 * API answers. --accept-rotation takes a recipient's changed keys instead of refusing them (pinning).
 */
export interface SendOptions {
  identity?: string;
  to?: string;
  account?: string;
  message?: string;
  maxDownloads?: string;
  expiresIn?: string;
  plain?: boolean;
  acceptRotation?: boolean;
}

/** What --plain costs, said before anything is sent. */
export const PLAIN_WARNING =
  "warning: --plain sends the files unencrypted: the server, and anyone who can read its storage, can read them";

export async function send(values: SendOptions, positionals: string[]): Promise<number> {
  const identity = required(values.identity, "--identity FILE");
  const to = required(values.to, "--to RECIPIENT");
  if (positionals.length === 0) throw new UsageError("give at least one PATH to send");
  const maxDownloads = integerOption(values.maxDownloads, "--max-downloads", 1, 1000);
  const client = await agentClient(identity, "cli");
  if (values.plain) warn(PLAIN_WARNING);
  const transfer = await withProgressBars(({ onProgress }) =>
    client.send({
      to,
      paths: positionals.map((path) => resolve(path)),
      account: values.account,
      message: values.message,
      maxDownloads,
      expiresIn: values.expiresIn,
      plain: values.plain,
      acceptRotation: values.acceptRotation,
      onProgress,
    }),
  );
  printJson(transfer);
  return 0;
}

import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { loadConfig } from "./config.js";
import { type OutboxMessage, parseMessage } from "./mail/eml.js";

export interface OutboxOptions {
  to?: string;
  type?: string;
  json?: boolean;
}

/** The .eml files of DATA_DIR/outbox, oldest first, with their file names. */
function outboxFiles(dir: string): (OutboxMessage & { file: string })[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => name.endsWith(".eml"))
    .sort()
    .map((name) => ({ file: join(dir, name), ...parseMessage(readFileSync(join(dir, name), "utf8")) }));
}

/**
 * `handoff outbox [--to ADDRESS] [--type TYPE] [--json]`: the e-mail the server wrote to
 * DATA_DIR/outbox (no SMTP_URL), oldest first, each with its links whole and decoded, so that a
 * verify link can be copied from here.
 */
export async function outbox(values: OutboxOptions): Promise<void> {
  const config = loadConfig(process.env);
  const dir = resolve(config.dataDir, "outbox");
  const messages = outboxFiles(dir).filter(
    (message) =>
      (!values.to || message.to.toLowerCase().includes(values.to.toLowerCase())) &&
      (!values.type || message.type === values.type),
  );
  if (config.smtpUrl)
    process.stderr.write(`SMTP_URL is set: new e-mail goes out through SMTP, not to ${dir}\n`);
  if (values.json) {
    process.stdout.write(`${JSON.stringify({ outbox: dir, messages }, null, 2)}\n`);
    return;
  }
  if (messages.length === 0) {
    process.stdout.write(`No e-mail in ${dir}${values.to || values.type ? " matches" : " yet"}.\n`);
    return;
  }
  for (const message of messages) {
    const when = message.date?.replace(/\.\d+Z$/, "Z") ?? "-";
    process.stdout.write(`${when}  ${message.type ?? "-"}  ${message.to}  ${message.subject}\n`);
    for (const link of message.links) process.stdout.write(`  ${link}\n`);
  }
}

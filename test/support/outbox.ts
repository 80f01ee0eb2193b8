import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parseMessage } from "../../src/mail/eml.js";

export interface OutboxMessage {
  to: string;
  type: string | null;
  /** The whole message, its body decoded (src/mail/eml.ts), for matching links. */
  text: string;
}

/** The e-mails the embedded outbox holds under DATA_DIR/outbox, oldest first. */
export function outboxMessages(dataDir: string): OutboxMessage[] {
  const dir = join(dataDir, "outbox");
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => name.endsWith(".eml"))
    .sort()
    .map((name) => {
      const raw = readFileSync(join(dir, name), "utf8");
      const message = parseMessage(raw);
      const head = raw.split(/\r?\n\r?\n/)[0] ?? "";
      return { to: message.to, type: message.type, text: `${head}\n\n${message.text}` };
    });
}

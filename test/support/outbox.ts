import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

export interface OutboxMessage {
  to: string;
  type: string | null;
  /** The whole message with quoted-printable soft breaks and escapes undone, for matching links. */
  text: string;
}

function decodeQuotedPrintable(raw: string): string {
  return raw
    .replace(/=\r?\n/g, "")
    .replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
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
      return {
        to: /^To: (.*)$/im.exec(raw)?.[1]?.trim() ?? "",
        type: /^X-Service-Email-Type: (.*)$/im.exec(raw)?.[1]?.trim() ?? null,
        text: decodeQuotedPrintable(raw),
      };
    });
}

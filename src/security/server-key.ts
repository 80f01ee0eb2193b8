import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * The server key from SERVER_KEY, else the one generated into DATA_DIR on first start (mode 0600),
 * so sealed keys and signed URLs stay valid across restarts.
 */
export function loadServerKey(configured: Buffer | null, dataDir: string): Buffer {
  if (configured) return configured;
  const path = join(dataDir, "server.key");
  if (existsSync(path)) return Buffer.from(readFileSync(path, "utf8").trim(), "base64");
  mkdirSync(dataDir, { recursive: true });
  const key = randomBytes(32);
  writeFileSync(path, `${key.toString("base64")}\n`, { mode: 0o600, flag: "wx" });
  return key;
}

import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * The server key from SERVER_KEY, else the one generated into DATA_DIR on first start (mode 0600),
 * so sealed keys and signed URLs stay valid across restarts.
 */
export function loadServerKey(configured: Buffer | null, dataDir: string): Buffer {
  return loadKey(configured, dataDir, "server.key");
}

/**
 * The transparency log's Ed25519 seed from LOG_KEY, else generated beside the server key on first
 * start (decisions 9.2): a key of its own, so checkpoints can be verified by anyone who never sees
 * the server key. Several instances share it through LOG_KEY or a shared DATA_DIR.
 */
export function loadLogKey(configured: Buffer | null, dataDir: string): Buffer {
  return loadKey(configured, dataDir, "log.key");
}

/** 32 random bytes kept base64 in DATA_DIR/`name` (mode 0600), unless configured. */
function loadKey(configured: Buffer | null, dataDir: string, name: string): Buffer {
  if (configured) return configured;
  const path = join(dataDir, name);
  if (existsSync(path)) return Buffer.from(readFileSync(path, "utf8").trim(), "base64");
  mkdirSync(dataDir, { recursive: true });
  const key = randomBytes(32);
  writeFileSync(path, `${key.toString("base64")}\n`, { mode: 0o600, flag: "wx" });
  return key;
}

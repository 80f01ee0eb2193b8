import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Config } from "./config.js";

/** A database URL without its password, for showing. */
function withoutPassword(url: string): string {
  const parsed = new URL(url);
  if (parsed.password) parsed.password = "***";
  return parsed.toString();
}

/** Where the server keeps what, in words: the embedded defaults, or the stores configured. */
function whereDataIs(config: Config): string {
  const dataDir = resolve(config.dataDir);
  const events = config.eventStoreUrl
    ? "events in KurrentDB"
    : config.databaseUrl
      ? `events and read models in ${withoutPassword(config.databaseUrl)}`
      : `events and read models in ${join(dataDir, "pg")}`;
  const readModels =
    config.eventStoreUrl && config.databaseUrl
      ? `, read models in ${withoutPassword(config.databaseUrl)}`
      : "";
  const files = config.s3 ? `files in S3 bucket ${config.s3.bucket}` : `files in ${join(dataDir, "blobs")}`;
  const mail = config.smtpUrl
    ? "e-mail through SMTP"
    : `e-mail in ${join(dataDir, "outbox")} (handoff outbox)`;
  return `${events}${readModels}; ${files}; ${mail}`;
}

/**
 * The line `handoff serve` prints for people once it listens (on stderr: stdout is the JSON
 * request log): where it listens, where its data is, where the web app and the API docs are.
 */
export function startupLine(config: Config, listening: string, webRoot: string): string {
  const base = config.publicBaseUrl;
  const web = existsSync(join(webRoot, "index.html"))
    ? `web app ${base}/`
    : "web app not built (npm run build)";
  return `Handoff listening on ${listening} — ${web}, API docs ${base}/docs — ${whereDataIs(config)}\n`;
}

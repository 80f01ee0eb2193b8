import { fromBase64 } from "./crypto/base64.js";
import { HandoffError } from "./errors.js";
import type { WebhookMessageType } from "./types.js";

/** A webhook message as Handoff sends it (decisions 8.2). */
export interface WebhookMessage {
  type: WebhookMessageType;
  /** ISO 8601 time of the event the message is about. */
  timestamp: string;
  data: Record<string, unknown>;
}

/** The request headers as a framework hands them over: a Headers object or a plain record. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

export interface VerifyWebhookOptions {
  /** How far `webhook-timestamp` may be from now, in seconds (default 300, as Standard Webhooks). */
  toleranceSeconds?: number;
  /** Now, for tests (default: the system clock). */
  now?: Date;
}

const PREFIX = "whsec_";
/** WebCrypto's typings want ArrayBuffer-backed views; every view here is one. */
const bytes = (view: Uint8Array) => view as Uint8Array<ArrayBuffer>;

function header(headers: WebhookHeaders, name: string): string {
  const value =
    headers instanceof Headers ? headers.get(name) : (headers[name] ?? headers[name.toLowerCase()]);
  const one = Array.isArray(value) ? value[0] : value;
  if (!one) throw new HandoffError("WEBHOOK_INVALID", `the ${name} header is missing`);
  return one;
}

/**
 * Checks a webhook request the Standard Webhooks way and returns its message: the signature
 * (`v1,` + base64 HMAC-SHA256 of `id.timestamp.body` under the secret's decoded bytes, any of the
 * space-separated ones, so both secrets work during a rotation) and a timestamp within five
 * minutes, which keeps an old request from being replayed. `body`: the raw body, exactly as
 * received (parse it only after). Throws HandoffError `WEBHOOK_INVALID` otherwise.
 */
export async function verifyWebhook(
  secret: string,
  headers: WebhookHeaders,
  body: string | Uint8Array,
  options: VerifyWebhookOptions = {},
): Promise<WebhookMessage> {
  const id = header(headers, "webhook-id");
  const timestamp = header(headers, "webhook-timestamp");
  const signatures = header(headers, "webhook-signature");
  const seconds = Number(timestamp);
  const now = (options.now ?? new Date()).getTime() / 1000;
  if (!/^\d+$/.test(timestamp) || Math.abs(now - seconds) > (options.toleranceSeconds ?? 300))
    throw new HandoffError("WEBHOOK_INVALID", "the webhook-timestamp is missing or too far from now");
  const raw = typeof body === "string" ? new TextEncoder().encode(body) : body;
  const signed = new Uint8Array([...new TextEncoder().encode(`${id}.${timestamp}.`), ...raw]);
  const keyBytes = fromBase64(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret);
  const key = await globalThis.crypto.subtle.importKey(
    "raw",
    bytes(keyBytes),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["verify"],
  );
  for (const candidate of signatures.split(" ")) {
    const [version, value] = candidate.split(",");
    if (version !== "v1" || !value) continue;
    let mac: Uint8Array;
    try {
      mac = fromBase64(value);
    } catch {
      continue;
    }
    // subtle.verify compares in constant time.
    if (await globalThis.crypto.subtle.verify("HMAC", key, bytes(mac), bytes(signed)))
      return JSON.parse(new TextDecoder().decode(raw)) as WebhookMessage;
  }
  throw new HandoffError("WEBHOOK_INVALID", "no webhook-signature matches this secret");
}

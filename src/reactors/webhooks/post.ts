import type { LookupAddress, LookupOneOptions } from "node:dns";
import http from "node:http";
import https from "node:https";
import {
  allowedAddresses,
  checkWebhookUrlShape,
  type WebhookPolicy,
} from "../../security/webhook-addresses.js";

/** Decisions 8.3: an answer within 10 s delivers. */
export const ATTEMPT_TIMEOUT_MS = 10_000;
/** Of an answer, at most this much is read: its body says nothing we need. */
const MAX_ANSWER_BYTES = 64 * 1024;

export interface PostResult {
  statusCode: number | null;
  durationMs: number;
  /** Why the attempt failed; null when a 2xx came back. */
  error: string | null;
}

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * A `lookup` for http.request that resolves through the policy and refuses forbidden addresses:
 * the socket connects to the very address checked, so a name that rebinds between the check and
 * the connection cannot slip through (issue 23 point 2).
 */
function checkedLookup(policy: WebhookPolicy) {
  return (hostname: string, options: LookupOneOptions | { all: true }, callback: LookupCallback) => {
    allowedAddresses(hostname, policy).then(
      (addresses) => {
        if ("all" in options && options.all) callback(null, addresses);
        else {
          const first = addresses[0] as LookupAddress;
          callback(null, first.address, first.family);
        }
      },
      (error: Error) => callback(Object.assign(error, { code: "EFORBIDDEN" }), [] as LookupAddress[]),
    );
  };
}

/**
 * One attempt: POSTs the body and reads at most 64 KiB of the answer, within 10 s, following no
 * redirect. Never throws: every failure is the attempt's `error`.
 */
export async function postMessage(
  rawUrl: string,
  headers: Record<string, string>,
  body: string,
  policy: WebhookPolicy,
  timeoutMs = ATTEMPT_TIMEOUT_MS,
): Promise<PostResult> {
  const started = performance.now();
  const took = () => Math.round(performance.now() - started);
  let url: URL;
  try {
    // An address written in the URL never goes through `lookup`: the shape check covers it.
    url = checkWebhookUrlShape(rawUrl, policy);
  } catch (error) {
    return { statusCode: null, durationMs: took(), error: (error as Error).message };
  }
  const client = url.protocol === "https:" ? https : http;
  return new Promise((resolve) => {
    let settled = false;
    const finish = (statusCode: number | null, error: string | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      request.destroy();
      resolve({ statusCode, durationMs: took(), error });
    };
    const request = client.request(
      url,
      {
        method: "POST",
        headers: { ...headers, "content-length": String(Buffer.byteLength(body)) },
        lookup: checkedLookup(policy) as never,
        agent: false,
      },
      (response) => {
        const status = response.statusCode ?? 0;
        let read = 0;
        const done = () => {
          if (status >= 200 && status < 300) finish(status, null);
          else if (status >= 300 && status < 400)
            finish(status, `redirect to ${response.headers.location ?? "nowhere"} not followed`);
          else finish(status, `answered ${status}`);
        };
        response.on("data", (chunk: Buffer) => {
          read += chunk.length;
          if (read >= MAX_ANSWER_BYTES) done();
        });
        response.on("end", done);
        response.on("error", done);
      },
    );
    const timer = setTimeout(() => finish(null, `no answer within ${timeoutMs / 1000} s`), timeoutMs);
    request.on("error", (error: NodeJS.ErrnoException) =>
      finish(
        null,
        error.code === "EFORBIDDEN" ? error.message : `${error.code ?? "error"}: ${error.message}`,
      ),
    );
    request.end(body);
  });
}

import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { HandoffApiError, HandoffError } from "./errors.js";
import { type BodyBatches, streamingRequest } from "./streaming-request.js";

/** The settings every request shares. */
export interface TransportOptions {
  baseUrl: string;
  apiKey: string;
  fetch: typeof fetch;
  userAgent: string;
  /** Further attempts after the first, on 429 and (for idempotent steps) network errors and 5xx. */
  maxRetries: number;
  /** Sent as X-Service-Agent (decisions 3.6), so inbox, download and profile act as this agent. */
  agentId: string | null;
}

/** A streamed request body that can be made again for a retry (a stream is read once). */
export type BodySource = () => { body: BodyBatches; headers: Record<string, string> };

export interface RequestSpec {
  method: "GET" | "HEAD" | "POST" | "PUT" | "PATCH" | "DELETE";
  /** A path under the base URL, or an absolute URL (signed links, which carry no credential). */
  url: string;
  /** A list repeats the parameter once per value (`type=A&type=B`). */
  query?: Record<string, string | number | string[] | undefined>;
  /** The Accept header, when the answer is not JSON (a CSV report). */
  accept?: string;
  /** Further headers (a protocol's own, such as tus's Tus-Resumable). */
  headers?: Record<string, string>;
  json?: unknown;
  body?: BodySource;
  /**
   * Whether a network error or a 5xx may be retried: the step has no second effect (GET of a
   * signed link, PUT, a POST with its Idempotency-Key). A 429 is always retried: it was refused
   * before anything happened.
   */
  idempotent: boolean;
  /** The one Idempotency-Key of a logical POST, reused by its retries; made fresh when absent. */
  idempotencyKey?: string;
  signal?: AbortSignal;
}

const BACKOFF_BASE_MS = 250;
const BACKOFF_CAP_MS = 8000;

/** Exponential back-off with full jitter: attempt 0 waits up to 250 ms, then 500, 1000… up to 8 s. */
export function backoffMs(attempt: number): number {
  return Math.random() * Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** attempt);
}

/** Retry-After in seconds or as an HTTP date (RFC 9110 10.2.3); 1 s when absent or unreadable. */
export function retryAfterMs(response: Response, now = Date.now()): number {
  const header = response.headers.get("retry-after");
  if (header === null) return 1000;
  if (/^\d+$/.test(header.trim())) return Number(header.trim()) * 1000;
  const date = Date.parse(header);
  return Number.isNaN(date) ? 1000 : Math.max(0, date - now);
}

/** The API's error body as a HandoffApiError; any other answer gets the code HTTP_<status>. */
export async function apiError(response: Response): Promise<HandoffApiError> {
  const text = await response.text().catch(() => "");
  try {
    const parsed = JSON.parse(text) as {
      error?: { code?: unknown; message?: unknown; details?: unknown; candidates?: unknown };
    };
    const error = parsed.error;
    if (error && typeof error.code === "string") {
      return new HandoffApiError(
        response.status,
        error.code,
        typeof error.message === "string" ? error.message : `HTTP ${response.status}`,
        { details: error.details, candidates: error.candidates },
      );
    }
  } catch {
    // Not the API's JSON (a proxy's page, a storage service's XML): fall through.
  }
  const snippet = text.slice(0, 200).trim();
  return new HandoffApiError(
    response.status,
    `HTTP_${response.status}`,
    `HTTP ${response.status} ${response.statusText}${snippet ? `: ${snippet}` : ""}`,
  );
}

const isAbort = (error: unknown) => (error as { name?: string }).name === "AbortError";

/**
 * One place for how the SDK talks HTTP: credentials, Idempotency-Key on every POST, waiting
 * Retry-After on 429, bounded retries with back-off where a repeat has no second effect, and
 * the API's error body turned into HandoffApiError.
 */
export class Transport {
  constructor(private readonly options: TransportOptions) {}

  get baseUrl(): string {
    return this.options.baseUrl;
  }

  /** Sends the request and answers its parsed JSON. */
  async json<T>(spec: RequestSpec): Promise<T> {
    const response = await this.send(spec);
    return (await response.json()) as T;
  }

  /** Sends the request and answers the successful response, its body unread (for streams). */
  async send(spec: RequestSpec): Promise<Response> {
    const signed = /^https?:\/\//.test(spec.url);
    const url = new URL(signed ? spec.url : `${this.options.baseUrl}${spec.url}`);
    for (const [name, value] of Object.entries(spec.query ?? {})) {
      for (const one of Array.isArray(value) ? value : value === undefined ? [] : [value]) {
        url.searchParams.append(name, String(one));
      }
    }
    const idempotencyKey = spec.method === "POST" ? (spec.idempotencyKey ?? randomUUID()) : null;
    for (let attempt = 0; ; attempt++) {
      const last = attempt >= this.options.maxRetries;
      let response: Response;
      try {
        response = await this.attempt(url, spec, signed, idempotencyKey);
      } catch (error) {
        if (isAbort(error) || spec.signal?.aborted) throw error;
        // The SDK's own refusal from inside a request body (a file that changed): not the network's.
        const own = handoffCause(error);
        if (own) throw own;
        if (!spec.idempotent || last) {
          throw new HandoffError(
            "NETWORK_ERROR",
            `${spec.method} ${url.origin}${url.pathname} failed: ${describe(error)}`,
            { cause: error },
          );
        }
        await sleep(backoffMs(attempt), undefined, { signal: spec.signal });
        continue;
      }
      if (response.ok) return response;
      const error = await apiError(response);
      if (last) throw error;
      if (response.status === 429) {
        await sleep(retryAfterMs(response), undefined, { signal: spec.signal });
        continue;
      }
      // On a retry the body is the same, so a conflict means the first attempt is still running.
      const stillRunning = attempt > 0 && error.code === "IDEMPOTENCY_CONFLICT";
      if (spec.idempotent && (response.status >= 500 || stillRunning)) {
        await sleep(backoffMs(attempt), undefined, { signal: spec.signal });
        continue;
      }
      throw error;
    }
  }

  /** One attempt: streamed bodies through node:http(s), everything else through `fetch`. */
  private attempt(
    url: URL,
    spec: RequestSpec,
    signed: boolean,
    idempotencyKey: string | null,
  ): Promise<Response> {
    const headers: Record<string, string> = { "user-agent": this.options.userAgent, ...spec.headers };
    // A signed link is its own credential: the API key never goes to storage or another host.
    if (!signed) {
      headers.authorization = `Bearer ${this.options.apiKey}`;
      if (this.options.agentId) headers["x-service-agent"] = this.options.agentId;
    }
    if (idempotencyKey) headers["idempotency-key"] = idempotencyKey;
    if (spec.accept) headers.accept = spec.accept;
    const signal = spec.signal ? { signal: spec.signal } : {};
    if (spec.body) {
      const made = spec.body();
      return streamingRequest(url, {
        method: spec.method,
        headers: { ...headers, ...made.headers },
        body: made.body,
        ...signal,
      });
    }
    const init: RequestInit = { method: spec.method, headers, ...signal };
    if (spec.json !== undefined) {
      headers["content-type"] = "application/json";
      init.body = JSON.stringify(spec.json);
    }
    return this.options.fetch(url, init);
  }
}

function handoffCause(error: unknown): HandoffError | null {
  for (let current = error; current instanceof Error; current = current.cause) {
    if (current instanceof HandoffError) return current;
  }
  return null;
}

function describe(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (error as Error).message ?? String(error);
}

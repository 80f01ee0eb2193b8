import type { Readable } from "node:stream";
import { pipeline, Transform, type TransformCallback } from "node:stream";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { BlobStore } from "../blobs/port.js";

/**
 * Every Prometheus metric of the service, in one registry served at GET /metrics (src/http/metrics.ts). The counters
 * are process-wide (one server per process), so the code that appends events, moves blob bytes or
 * refuses a request over its rate limit counts with a one-line call to a function of this module.
 */
const registry = new Registry();
collectDefaultMetrics({ register: registry, prefix: "handoff_" });

const requestDuration = new Histogram({
  name: "handoff_http_request_duration_seconds",
  help: "HTTP requests by route pattern (never the raw URL), method and status code",
  labelNames: ["method", "route", "status_code"],
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  registers: [registry],
});

const appendedEvents = new Counter({
  name: "handoff_events_appended_total",
  help: "Events appended to the event store by this process",
  registers: [registry],
});

const uploadedBytes = new Counter({
  name: "handoff_uploaded_bytes_total",
  help: "File bytes stored through this server (multipart creates and signed upload links)",
  registers: [registry],
});

const downloadedBytes = new Counter({
  name: "handoff_downloaded_bytes_total",
  help: "File bytes served by this server (signed download links of the filesystem blob store)",
  registers: [registry],
});

const rateLimitRefusals = new Counter({
  name: "handoff_rate_limit_refusals_total",
  help: "Requests refused with 429 by the per-key rate limits, by bucket",
  labelNames: ["rule"],
  registers: [registry],
});

const projectionLagEvents = new Gauge({
  name: "handoff_projection_lag_events",
  help: "Events appended but not yet applied by the slowest projection (counted up to 10000)",
  registers: [registry],
});

const projectionLagSeconds = new Gauge({
  name: "handoff_projection_lag_seconds",
  help: "Age of the oldest event the slowest projection has not applied yet (0 when caught up)",
  registers: [registry],
});

/** Hook for the event store adapters: call once per committed append. */
export function countAppended(appends: readonly { events: readonly unknown[] }[]): void {
  appendedEvents.inc(appends.reduce((sum, append) => sum + append.events.length, 0));
}

/** Hook for the rate limits: call once per refused request. */
export function countRateLimitRefusal(rule: string): void {
  rateLimitRefusals.inc({ rule });
}

/** Counts the bytes flowing through, as they flow: a large download shows while it runs. */
class ByteMeter extends Transform {
  constructor(private readonly counter: Counter) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.counter.inc(chunk.length);
    callback(null, chunk);
  }
}

/** A served blob's stream, counted as it is read. */
function metered(source: Readable): Readable {
  // pipeline() hands back its last stream; destroying it (a client gone) closes the source too.
  return pipeline(source, new ByteMeter(downloadedBytes), () => {});
}

/**
 * The blob store with its bytes counted: stored bytes once a put completes, served bytes as the
 * stream is read. With S3, signed links bypass the server: only multipart creates count there.
 */
export function meteredBlobStore(store: BlobStore): BlobStore {
  return {
    async put(key, body, options) {
      const stored = await store.put(key, body, options);
      uploadedBytes.inc(stored.size);
      return stored;
    },
    get: async (key, range) => metered(await store.get(key, range)),
    async open(key) {
      const blob = await store.open(key);
      return (
        blob && {
          ...blob,
          read: async (range) => metered(await blob.read(range)),
          bytes: async (range) => {
            const bytes = await blob.bytes(range);
            downloadedBytes.inc(bytes.length);
            return bytes;
          },
        }
      );
    },
    stat: (key) => store.stat(key),
    delete: (keys) => store.delete(keys),
    uploadUrl: (key, options) => store.uploadUrl(key, options),
    resumable: store.resumable,
    downloadUrl: (key, options) => store.downloadUrl(key, options),
    ping: () => store.ping(),
    ...(store.freeBytes ? { freeBytes: store.freeBytes.bind(store) } : {}),
    ...(store.close ? { close: store.close.bind(store) } : {}),
    // The crash-leftover sweep works on the store underneath: nothing it touches is transferred.
    ...(store.leftovers ? { leftovers: store.leftovers } : {}),
  };
}

/** How far the read models trail the event log. */
export interface ProjectionLag {
  events: number;
  ms: number;
}

/** Hook for the HTTP layer: call once per answered request, labelled by its route pattern. */
export function observeRequest(method: string, route: string, statusCode: number, seconds: number): void {
  requestDuration.observe({ method, route, status_code: String(statusCode) }, seconds);
}

/** Every metric in Prometheus text format, with the read models' lag as of now. */
export async function scrape(lag: ProjectionLag): Promise<{ contentType: string; text: string }> {
  projectionLagEvents.set(lag.events);
  projectionLagSeconds.set(lag.ms / 1000);
  return { contentType: registry.contentType, text: await registry.metrics() };
}

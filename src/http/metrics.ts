import type { FastifyInstance } from "fastify";
import fastifyPlugin from "fastify-plugin";
import { observeRequest, type ProjectionLag, scrape } from "../observability/metrics.js";
import { digestsEqual, sha256Hex } from "../security/secrets.js";
import { bearer } from "./auth.js";
import { unauthorized } from "./errors.js";

export interface MetricsOptions {
  /** When set, GET /metrics needs `Authorization: Bearer <token>`; else it is open (docs/deployment.md). */
  token: string | null;
  /** Read at each scrape; the projection engine supplies it. */
  projectionLag: () => Promise<ProjectionLag>;
}

/** Times every request by its route pattern, and serves GET /metrics in Prometheus text format. */
export const metricsPlugin = fastifyPlugin<MetricsOptions>(
  async (app: FastifyInstance, options) => {
    app.addHook("onResponse", (request, reply, done) => {
      observeRequest(
        request.method,
        // Unmatched URLs (404s, scans) share one label: the raw URL would grow the series without bound.
        request.routeOptions.url ?? "unmatched",
        reply.statusCode,
        reply.elapsedTime / 1000,
      );
      done();
    });

    const expected = options.token === null ? null : sha256Hex(options.token);
    app.get("/metrics", { config: { auth: "none" }, schema: { hide: true } }, async (request, reply) => {
      if (expected !== null) {
        const token = bearer(request);
        if (!token || !digestsEqual(sha256Hex(token), expected)) throw unauthorized("invalid metrics token");
      }
      const { contentType, text } = await scrape(await options.projectionLag());
      reply.header("content-type", contentType);
      return text;
    });
  },
  { name: "handoff-metrics" },
);

import type { FastifyInstance } from "fastify";
import type { Clock } from "../clock.js";
import { countRateLimitRefusal } from "../observability/metrics.js";
import type { RateLimitCounter } from "../rate-limits/counter.js";
import { RATE_LIMIT_WINDOW_MS, rateLimitRule } from "../rate-limits/policy.js";
import { credentialId, type Principal } from "./auth.js";
import { HttpError } from "./errors.js";

const WINDOW_MS = RATE_LIMIT_WINDOW_MS;
/** Marks an instance whose requests are rate limited, so the hook cannot be added twice. */
const REGISTERED = "handoffRateLimits";

/** Whether `registerRateLimits` was called on this instance. */
export const hasRateLimits = (app: FastifyInstance): boolean => app.hasDecorator(REGISTERED);

/**
 * Decisions 3.15: requests made with an API key are counted per key in fixed one-minute windows
 * aligned to the service clock (so the test clock moves them too), one bucket per row of the
 * policy table and one shared bucket for every other endpoint.
 *
 * Register it after `registerAuthentication`: fastify runs onRequest hooks in the order they were
 * added, so `request.principal` is set here and a request refused with 401 is never counted. The
 * headers go on the reply before anything can fail, so the error handler's answer (400, 404, 429…)
 * keeps them. A limited request ends here: its body is never read and its handler never runs.
 *
 * If the counter cannot answer (Redis away), the request goes through without the headers and the
 * failure is logged: an unavailable counter store must not take the API down with it.
 */
export function registerRateLimits(app: FastifyInstance, counter: RateLimitCounter, clock: Clock): void {
  if (hasRateLimits(app)) throw new Error("rate limits are already registered on this instance");
  app.decorate(REGISTERED, true);
  app.addHook("onRequest", async (request, reply) => {
    const principal: Principal | null = request.principal ?? null;
    const route = request.routeOptions.url;
    if (principal?.kind !== "account" || !route) return;

    const rule = rateLimitRule(request.method, route);
    const now = clock.now().getTime();
    const windowStart = Math.floor(now / WINDOW_MS) * WINDOW_MS;
    const windowEnd = windowStart + WINDOW_MS;
    let count: number;
    try {
      count = await counter.hit(`${credentialId(principal.credential)}:${rule.name}`, windowStart, WINDOW_MS);
    } catch (error) {
      request.log.error({ err: error }, "rate-limit counter failed; request not limited");
      return;
    }

    reply.header("X-RateLimit-Limit", String(rule.limit));
    reply.header("X-RateLimit-Remaining", String(Math.max(0, rule.limit - count)));
    reply.header("X-RateLimit-Reset", String(Math.ceil(windowEnd / 1000)));
    if (count > rule.limit) {
      const retryAfter = Math.max(1, Math.ceil((windowEnd - now) / 1000));
      reply.header("Retry-After", String(retryAfter));
      countRateLimitRefusal(rule.name);
      throw new HttpError(
        429,
        "RATE_LIMITED",
        `rate limit of ${rule.limit} requests per minute reached for this API key; retry after ${retryAfter} s`,
      );
    }
  });
}

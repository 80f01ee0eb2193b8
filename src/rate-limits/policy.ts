/**
 * Rate limits per API key (interface spec section 8, decisions 3.15): fixed one-minute windows;
 * each row of the spec's table is a bucket of its own per key, and every other authenticated
 * endpoint shares one default bucket per key.
 */
export const RATE_LIMIT_WINDOW_MS = 60_000;

export interface RateLimitRule {
  /** Names the bucket within one key: stable, it is part of the counter keys. */
  name: string;
  /** Requests per window. */
  limit: number;
}

export interface RateLimitRow extends RateLimitRule {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  /** The fastify route pattern; parameter names do not matter (`:id` and `:transfer_id` match alike). */
  route: string;
}

export const RATE_LIMIT_ROWS: readonly RateLimitRow[] = [
  { name: "transfers.create", method: "POST", route: "/v1/transfers", limit: 60 },
  { name: "transfers.list", method: "GET", route: "/v1/transfers", limit: 120 },
  { name: "transfers.get", method: "GET", route: "/v1/transfers/:id", limit: 120 },
  { name: "transfers.download", method: "GET", route: "/v1/transfers/:id/download", limit: 30 },
  { name: "transfers.delete", method: "DELETE", route: "/v1/transfers/:id", limit: 30 },
  { name: "api-keys.create", method: "POST", route: "/v1/accounts/:account_id/api-keys", limit: 10 },
  {
    name: "api-keys.revoke",
    method: "DELETE",
    route: "/v1/accounts/:account_id/api-keys/:key_id",
    limit: 10,
  },
];

/** Every authenticated endpoint not in the table: one bucket per key, shared by all of them. */
export const DEFAULT_RATE_LIMIT: RateLimitRule = { name: "default", limit: 600 };

/** `/v1/transfers/:transfer_id(^\\d+$)/download` → `/v1/transfers/:/download`. */
const routeShape = (route: string): string =>
  route
    .split("/")
    .map((segment) => (segment.startsWith(":") ? ":" : segment))
    .join("/")
    .replace(/\/+$/, "");

/** Rules found so far, by method and route pattern (the service's own, a few dozen). */
const rulesByRoute = new Map<string, RateLimitRule>();

const rowsByShape = new Map(RATE_LIMIT_ROWS.map((row) => [`${row.method} ${routeShape(row.route)}`, row]));

/**
 * The rule for a request, by its method and the pattern of the route that matched it (fastify's
 * `request.routeOptions.url`), never the raw URL: `/v1/transfers/inbox` is its own route, not a
 * transfer id. HEAD counts as the GET it mirrors.
 */
export function rateLimitRule(method: string, routePattern: string): RateLimitRule {
  const asked = `${method} ${routePattern}`;
  const known = rulesByRoute.get(asked);
  if (known) return known;
  const verb = method.toUpperCase() === "HEAD" ? "GET" : method.toUpperCase();
  const row = rowsByShape.get(`${verb} ${routeShape(routePattern)}`) ?? DEFAULT_RATE_LIMIT;
  const rule = { name: row.name, limit: row.limit };
  rulesByRoute.set(asked, rule);
  return rule;
}

/**
 * Decisions 4.3: failed logins per e-mail address. Counted in fixed windows aligned to the service
 * clock, like the per-key limits; an address with this many failures in its current window is
 * refused (429 RATE_LIMITED) until the window ends, right password or not.
 */
export const LOGIN_FAILURES = { name: "login-failures", limit: 10, windowMs: 15 * 60_000 } as const;

/**
 * Forgot-password and resend-verification e-mails per address (known or not, so the limit tells
 * nothing): enough for a person who mistyped, too few to flood someone's mailbox.
 */
export const ACCOUNT_MAIL_REQUESTS = { name: "account-mail", limit: 5, windowMs: 15 * 60_000 } as const;

/**
 * Inbox event streams (decisions 8.4) open at once per API key (or web session), on every instance
 * together when REDIS_URL is set (src/rate-limits/open-streams.ts), else on each instance: a
 * stream holds a connection for as long as its client likes, so the per-minute limits do not bound
 * them. A listener needs one per agent it listens for; ten leave room for a few agents and for a
 * client reconnecting before the instance noticed its old connection was gone. The next one is
 * refused (429 RATE_LIMITED) until one of the key's streams closes; `retryAfterSeconds` is the
 * keep-alive interval, a fair wait for one of them to end.
 */
export const OPEN_EVENT_STREAMS = { name: "open-event-streams", limit: 10, retryAfterSeconds: 15 } as const;

/**
 * Decisions 10.2: requests per request-link token (the by-token endpoints, which take no other
 * credential), counted under a digest of the token in fixed windows on the service clock. Enough
 * for a person sending several times over; too few to probe a link or flood its agent.
 */
export const REQUEST_TOKEN_REQUESTS = {
  name: "request-token",
  limit: 10,
  windowMs: RATE_LIMIT_WINDOW_MS,
} as const;

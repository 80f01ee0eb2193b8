/**
 * Every limit on what one HTTP request may take from the server: sizes, depth and time. Each is
 * enforced in one place, named beside it; docs/security.md lists them with the reasons.
 */

/** A JSON body (every API body but file data): fastify's bodyLimit, set in app.ts. */
export const JSON_BODY_LIMIT = 1024 * 1024;

/** Nesting depth of a JSON body or the transfer form's metadata: json-guard.ts. */
export const MAX_JSON_DEPTH = 64;

/**
 * One path segment (a signed link's token is the longest): the router's maxParamLength in
 * app.ts; longer answers 414.
 */
export const MAX_PARAM_LENGTH = 2048;

/** The whole request head, request line and headers: Node's maxHeaderSize; more answers 431. */
export const MAX_HEADER_BYTES = 16 * 1024;

/** Times that bound a slow client; tests shorten them through AppOptions. */
export interface TimeLimits {
  /** The request head must arrive within this after the connection opens (Node's headersTimeout); else 408. */
  headersTimeoutMs: number;
  /**
   * A body that is still arriving must bring at least `bodyMinBytes` in every window of this
   * length (slow-bodies.ts); else 408 and the connection is closed. A body idle after its headers
   * brings none. A window where the server itself holds unread bytes (its disk is the slow side)
   * does not count against the client.
   */
  bodyWindowMs: number;
  bodyMinBytes: number;
  /** An idle keep-alive connection is closed after this. */
  keepAliveTimeoutMs: number;
}

export const TIME_LIMITS: TimeLimits = {
  headersTimeoutMs: 15_000,
  bodyWindowMs: 15_000,
  // 1 KiB per 15 s: any real upload, even on a poor mobile link, moves far more.
  bodyMinBytes: 1024,
  keepAliveTimeoutMs: 72_000,
};

/** The Node HTTP server settings for `limits`, as fastify options. */
export function serverTimeouts(limits: TimeLimits) {
  return {
    // A whole request may take as long as its body keeps moving (a 1 GiB upload takes minutes):
    // slow-bodies.ts bounds the gaps instead of the total.
    requestTimeout: 0,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    http: {
      maxHeaderSize: MAX_HEADER_BYTES,
      // Node would answer a missing Host with an empty 400: client-errors.ts answers it instead.
      requireHostHeader: false,
      headersTimeout: limits.headersTimeoutMs,
      // How often Node looks for heads that are late: a fraction of the limit, so it holds closely.
      connectionsCheckingInterval: Math.max(100, Math.floor(limits.headersTimeoutMs / 4)),
    },
  };
}

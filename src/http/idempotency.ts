import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Knex } from "knex";
import type { Clock } from "../clock.js";
import { openedAnswer, RETENTION_MS, sealedAnswer } from "../db/stored-answers.js";
import { sha256Hex } from "../security/secrets.js";
import { HttpError, validationError } from "./errors.js";

const HEADER = "idempotency-key";

declare module "fastify" {
  interface FastifyRequest {
    idempotency: { scope: string; key: string } | null;
  }
  interface FastifyContextConfig {
    /**
     * false: the route ignores Idempotency-Key. For the routes whose body or answer is a secret
     * (a password, a session token): a record would keep a digest of the one or a copy of the other.
     */
    idempotency?: false;
  }
}

interface StoredResponse {
  request_hash: string;
  status_code: number | null;
  body: string | null;
  created_at: Date | string;
}

function scopeOf(request: FastifyRequest): string {
  const principal = request.principal;
  switch (principal.kind) {
    case "account":
      return `account:${principal.accountId}`;
    case "admin":
      return "admin";
    case "connectionToken":
      return `token:${sha256Hex(principal.token)}`;
    case "anonymous":
      return "anonymous";
  }
}

const conflict = (message: string) => new HttpError(409, "IDEMPOTENCY_CONFLICT", message);

/** Only a POST with the header claims a key (decisions 3.17). */
const claimsKey = (request: FastifyRequest) =>
  request.method === "POST" && request.headers[HEADER] !== undefined;

/** A multipart upload is read by its route, which fingerprints what it received (fields and file contents). */
const streamed = (request: FastifyRequest) =>
  request.body === undefined && (request.headers["content-type"] ?? "").startsWith("multipart/");

/**
 * Decisions 3.17: a POST with `Idempotency-Key` is done once. The first request claims the key;
 * a repeat with the same request within 24 hours gets the first answer back, another request 409.
 * Answers of 500 and above release the key so the client can retry.
 */
export class Idempotency {
  constructor(
    private readonly db: Knex,
    private readonly clock: Clock,
    private readonly serverKey: Buffer,
  ) {}

  register(app: FastifyInstance): void {
    app.decorateRequest("idempotency", null);
    // Most requests carry no key: they pass both hooks at once, without a promise each.
    app.addHook("preHandler", (request, reply, done) => {
      if (streamed(request) || !claimsKey(request)) return done();
      this.apply(request, reply, JSON.stringify(request.body ?? null)).then(() => done(), done);
    });
    app.addHook("onSend", (request, reply, payload, done) => {
      const claim = request.idempotency;
      if (!claim) return done(null, payload);
      request.idempotency = null;
      this.keepAnswer(claim, reply.statusCode, payload).then(() => done(null, payload), done);
    });
  }

  /** The claimed key's answer, kept for repeats; a failure of the server's (500 and above) releases the key. */
  private async keepAnswer(claim: { scope: string; key: string }, status: number, payload: unknown) {
    if (status >= 500) {
      await this.db("idempotency_records").where(claim).del();
    } else {
      const body = typeof payload === "string" ? payload : JSON.stringify(payload ?? null);
      await this.db("idempotency_records")
        .where(claim)
        .update({ status_code: status, body: sealedAnswer(this.serverKey, body) });
    }
  }

  /**
   * Claims the request's key for `fingerprint`, or sends the first answer again and returns true
   * (the caller then does nothing more). Without the header it does nothing.
   */
  async apply(request: FastifyRequest, reply: FastifyReply, fingerprint: string): Promise<boolean> {
    if (!claimsKey(request) || request.routeOptions.config?.idempotency === false) return false;
    const key = request.headers[HEADER];
    if (typeof key !== "string" || key.length === 0 || key.length > 255) {
      throw validationError("Idempotency-Key must be 1 to 255 characters", "headers.idempotency-key");
    }
    const scope = scopeOf(request);
    const requestHash = sha256Hex(`${request.method} ${request.url}\n${fingerprint}`);
    const now = this.clock.now();
    await this.db("idempotency_records")
      .where({ scope, key })
      .where("created_at", "<", new Date(now.getTime() - RETENTION_MS))
      .del();
    const claimed = await this.db.raw<{ rows: unknown[] }>(
      `insert into idempotency_records (scope, key, request_hash, created_at) values (?, ?, ?, ?)
         on conflict do nothing returning key`,
      [scope, key, requestHash, now],
    );
    if (claimed.rows.length > 0) {
      request.idempotency = { scope, key };
      return false;
    }
    const stored = await this.db("idempotency_records")
      .where({ scope, key })
      .first<StoredResponse | undefined>();
    if (!stored) throw conflict("this Idempotency-Key was just released; retry");
    if (stored.request_hash !== requestHash) {
      throw conflict("this Idempotency-Key was used with a different request");
    }
    if (stored.status_code === null || stored.body === null) {
      throw conflict("a request with this Idempotency-Key is still in progress");
    }
    await reply
      .status(stored.status_code)
      .header("idempotent-replayed", "true")
      .type("application/json")
      .serializer((payload: unknown) => payload as string)
      .send(this.opened(stored.body));
    return true;
  }

  private opened(body: string): string {
    return openedAnswer(this.serverKey, body);
  }
}

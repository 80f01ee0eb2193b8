import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import type { ReceivingKey } from "../../../domain/human.js";
import {
  LoginThrottled,
  logIn,
  logOut,
  setReceivingKey,
  signUp,
  verifyEmail,
} from "../../command-handlers/humans.js";
import { findAccount } from "../../queries/accounts.js";
import { findPerson } from "../../queries/humans.js";
import { isBase64Key32 } from "../../security/public-keys.js";
import { callerAccount } from "../auth.js";
import { HttpError, notFound } from "../errors.js";
import { presentAccount } from "../presenters.js";
import type { RouteContext } from "../route-context.js";
import { accountSchema, errors, nameSchema, timestamp } from "../schemas.js";

// Their bodies or answers carry a password or a token: no Idempotency-Key record may keep them.
const NONE = { auth: "none" as const, idempotency: false as const };
const SESSION = { auth: "session" as const, idempotency: false as const };

/** Decisions 4.1: 10 to 200 characters. */
const passwordSchema = z.string().min(10).max(200);
const emailSchema = z.email().max(320);

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const kdfSchema = z.object({
  algorithm: z.literal("argon2id"),
  salt: z.string().min(4).max(256).regex(BASE64, "base64"),
  memory_kib: z
    .number()
    .int()
    .min(1024)
    .max(4 * 1024 * 1024),
  iterations: z.number().int().min(1).max(100),
  parallelism: z.number().int().min(1).max(64),
});
const receivingKeySchema = z.object({
  public_key: z.string(),
  kdf: kdfSchema,
  key_version: z.number().int(),
});

function presentReceivingKey(key: ReceivingKey) {
  const { kdf } = key;
  return {
    public_key: key.publicKey,
    kdf: {
      algorithm: kdf.algorithm,
      salt: kdf.salt,
      memory_kib: kdf.memoryKib,
      iterations: kdf.iterations,
      parallelism: kdf.parallelism,
    },
    key_version: key.keyVersion,
  };
}

/** Decisions 4.1–4.4: sign-up, verification, sessions and the receiving key of a person. */
export function humanRoutes({ service, settle }: RouteContext): FastifyPluginAsync {
  const { db } = service;
  const deps = service.humanDeps;

  /** The account object as the read models show it once a write has settled. */
  async function accountOf(accountId: string) {
    const account = await findAccount(db, deps.people, accountId);
    if (!account) throw new Error(`account ${accountId} missing from the read model after its write settled`);
    return presentAccount(account, await findPerson(db, deps.people, accountId));
  }

  return async (app) => {
    const routes = app.withTypeProvider<ZodTypeProvider>();

    routes.post(
      "/v1/auth/signup",
      {
        config: NONE,
        schema: {
          tags: ["people"],
          summary: "Create a person's account; a verification link goes to the address",
          body: z.object({
            email: emailSchema,
            password: passwordSchema,
            name: nameSchema.min(1).optional(),
          }),
          response: { 201: z.object({ account: accountSchema }), ...errors(400, 409, 415) },
        },
      },
      async (request, reply) => {
        const { email, password, name } = request.body;
        const created = await signUp(deps, { email, password, name: name ?? null }, request.id);
        await settle(created.position);
        return reply.status(201).send({ account: await accountOf(created.accountId) });
      },
    );

    routes.post(
      "/v1/auth/verify",
      {
        config: NONE,
        schema: {
          tags: ["people"],
          summary: "Confirm the address with the token of the verification link (single use, 24 h)",
          body: z.object({ token: z.string().min(1).max(512) }),
          response: { 200: z.object({ account: accountSchema }), ...errors(400, 415) },
        },
      },
      async (request) => {
        const verified = await verifyEmail(deps, request.body.token, request.id);
        await settle(verified.position);
        return { account: await accountOf(verified.accountId) };
      },
    );

    routes.post(
      "/v1/auth/login",
      {
        config: NONE,
        schema: {
          tags: ["people"],
          summary: "Start a 12-hour session (Bearer token) with e-mail and password",
          body: z.object({ email: z.string().max(320), password: z.string().max(1024) }),
          response: {
            200: z.object({ token: z.string(), expires_at: timestamp, account: accountSchema }),
            ...errors(400, 401, 403, 415, 429),
          },
        },
      },
      async (request, reply) => {
        let session: Awaited<ReturnType<typeof logIn>>;
        try {
          session = await logIn(deps, request.body, request.id);
        } catch (error) {
          if (!(error instanceof LoginThrottled)) throw error;
          reply.header("Retry-After", String(error.retryAfterSeconds));
          throw new HttpError(429, "RATE_LIMITED", error.message);
        }
        await settle(session.position);
        return {
          token: session.token,
          expires_at: session.expiresAt,
          account: await accountOf(session.accountId),
        };
      },
    );

    routes.post(
      "/v1/auth/logout",
      {
        config: SESSION,
        schema: {
          tags: ["people"],
          summary: "End the caller's session at once",
          response: { 200: z.object({ status: z.literal("logged_out") }), ...errors(401) },
        },
      },
      async (request) => {
        const caller = callerAccount(request);
        const ended = await logOut(deps, caller.sessionId as string, caller);
        await settle(ended.position);
        return { status: "logged_out" as const };
      },
    );

    routes.get(
      "/v1/auth/session",
      {
        config: SESSION,
        schema: {
          tags: ["people"],
          summary: "The account of the caller's session (for the web app)",
          response: { 200: z.object({ account: accountSchema }), ...errors(401) },
        },
      },
      async (request) => ({ account: await accountOf(callerAccount(request).accountId) }),
    );

    routes.put(
      "/v1/auth/receiving-key",
      {
        config: SESSION,
        schema: {
          tags: ["people"],
          summary: "Set (or rotate) the person's receiving public key; held transfers activate",
          body: z.object({ public_key: z.string().max(64), kdf: kdfSchema }),
          response: { 200: receivingKeySchema, ...errors(400, 401, 403, 415) },
        },
      },
      async (request) => {
        const caller = callerAccount(request);
        const { public_key, kdf } = request.body;
        if (!isBase64Key32(public_key)) {
          throw new HttpError(
            400,
            "INVALID_PUBLIC_KEY",
            "public_key must be base64 of 32 raw bytes (X25519)",
          );
        }
        const set = await setReceivingKey(
          deps,
          caller,
          {
            publicKey: public_key,
            kdf: {
              algorithm: kdf.algorithm,
              salt: kdf.salt,
              memoryKib: kdf.memory_kib,
              iterations: kdf.iterations,
              parallelism: kdf.parallelism,
            },
          },
          settle,
        );
        await settle(set.position);
        return presentReceivingKey(set.receivingKey);
      },
    );

    routes.get(
      "/v1/auth/receiving-key",
      {
        schema: {
          tags: ["people"],
          summary: "The person's receiving public key and how it is derived; 404 when none is set",
          response: { 200: receivingKeySchema, ...errors(401, 404) },
        },
      },
      async (request) => {
        const person = await findPerson(db, deps.people, callerAccount(request).accountId);
        if (!person?.receiving_key) throw notFound("receiving key");
        return presentReceivingKey(person.receiving_key);
      },
    );
  };
}

import type { FastifyPluginAsync, FastifyReply } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import type { ReceivingKey } from "../../../domain/human.js";
import {
  changePassword,
  logIn,
  logOut,
  requestPasswordReset,
  resendVerification,
  resetPassword,
  setReceivingKey,
  signUp,
  Throttled,
  verifyEmail,
} from "../../command-handlers/humans.js";
import * as recovery from "../../contract/account-recovery.js";
import * as api from "../../contract/people.js";
import { findAccount } from "../../queries/accounts.js";
import { findPerson } from "../../queries/humans.js";
import { isBase64Key32 } from "../../security/public-keys.js";
import { callerAccount } from "../auth.js";
import { HttpError, notFound } from "../errors.js";
import { presentAccount } from "../presenters.js";
import type { RouteContext } from "../route-context.js";
import { serve } from "../serve.js";

/** The one answer of forgot-password and resend-verification, whether or not the address has an account. */
const MAIL_REQUESTED = {
  status: "accepted" as const,
  message: "if this address has an account that needs it, an e-mail is on its way",
};

/** Runs a per-address-limited command; over the limit: 429 RATE_LIMITED with Retry-After. */
async function withinAddressLimit<T>(reply: FastifyReply, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (!(error instanceof Throttled)) throw error;
    reply.header("Retry-After", String(error.retryAfterSeconds));
    throw new HttpError(429, "RATE_LIMITED", error.message);
  }
}

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

    routes.route({
      ...serve(api.signUp),
      handler: async (request, reply) => {
        const { email, password, name } = request.body;
        const created = await signUp(deps, { email, password, name: name ?? null }, request.id);
        await settle(created.position);
        return reply.status(201).send({ account: await accountOf(created.accountId) });
      },
    });

    routes.route({
      ...serve(api.verifyEmail),
      handler: async (request) => {
        const verified = await verifyEmail(deps, request.body.token, request.id);
        await settle(verified.position);
        return { account: await accountOf(verified.accountId) };
      },
    });

    routes.route({
      ...serve(api.logIn),
      handler: async (request, reply) => {
        const session = await withinAddressLimit(reply, () => logIn(deps, request.body, request.id));
        await settle(session.position);
        return {
          token: session.token,
          expires_at: session.expiresAt,
          account: await accountOf(session.accountId),
        };
      },
    });

    routes.route({
      ...serve(api.logOut),
      handler: async (request) => {
        const caller = callerAccount(request);
        const ended = await logOut(deps, caller.sessionId as string, caller);
        await settle(ended.position);
        return { status: "logged_out" as const };
      },
    });

    routes.route({
      ...serve(api.getSession),
      handler: async (request) => ({ account: await accountOf(callerAccount(request).accountId) }),
    });

    // Both mail a link to the address's account when it needs one, and answer the same 202 for any address.
    for (const [spec, mail] of [
      [recovery.resendVerification, resendVerification],
      [recovery.forgotPassword, requestPasswordReset],
    ] as const) {
      routes.route({
        ...serve(spec),
        handler: async (request, reply) => {
          await withinAddressLimit(reply, () => mail(deps, request.body.email, request.id));
          return reply.status(202).send(MAIL_REQUESTED);
        },
      });
    }

    routes.route({
      ...serve(recovery.resetPassword),
      handler: async (request) => {
        const reset = await resetPassword(deps, request.body, request.id);
        await settle(reset.position);
        return { status: "password_reset" as const };
      },
    });

    routes.route({
      ...serve(recovery.changePassword),
      handler: async (request, reply) => {
        const caller = callerAccount(request);
        const { current_password, new_password } = request.body;
        const changed = await withinAddressLimit(reply, () =>
          changePassword(
            deps,
            { ...caller, sessionId: caller.sessionId as string },
            { currentPassword: current_password, newPassword: new_password },
          ),
        );
        await settle(changed.position);
        return { status: "password_changed" as const };
      },
    });

    routes.route({
      ...serve(api.setReceivingKey),
      handler: async (request) => {
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
    });

    routes.route({
      ...serve(api.getReceivingKey),
      handler: async (request) => {
        const person = await findPerson(db, deps.people, callerAccount(request).accountId);
        if (!person?.receiving_key) throw notFound("receiving key");
        return presentReceivingKey(person.receiving_key);
      },
    });
  };
}

import type { FastifyPluginAsync, FastifyReply } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { refuse } from "../../../domain/decider.js";
import { requestStatusAt } from "../../../domain/request-link.js";
import type { Clock } from "../../clock.js";
import {
  confirmRequestTransfer,
  createRequestLink,
  linkOfToken,
  revokeRequestLink,
  sendToRequest,
} from "../../command-handlers/requests.js";
import * as api from "../../contract/requests.js";
import { EXPIRES_IN_SECONDS } from "../../contract/transfers.js";
import { findConnectedAgentBySlug } from "../../queries/agents.js";
import { findRequestLink, listRequestLinks, type RequestLinkWithAgent } from "../../queries/request-links.js";
import type { RateLimitCounter } from "../../rate-limits/counter.js";
import { REQUEST_TOKEN_REQUESTS } from "../../rate-limits/policy.js";
import { sha256Hex } from "../../security/secrets.js";
import { callerAccount } from "../auth.js";
import { callingAgent } from "../calling-agent.js";
import { HttpError, notFound, validationError } from "../errors.js";
import { presentUploadLinks } from "../presenters.js";
import type { RouteContext } from "../route-context.js";
import { serve } from "../serve.js";

const iso = (value: Date | string) => new Date(value).toISOString();

/** A link's status now, by the one rule (domain/request-link.ts). */
function statusOf(row: RequestLinkWithAgent, now: Date) {
  return requestStatusAt(
    {
      revoked: row.revoked_at !== null,
      uses: row.uses,
      maxUses: row.max_uses,
      expiresAt: iso(row.expires_at),
    },
    now.toISOString(),
  );
}

/** A link as its owner sees it (decisions 10.1), never its token. */
function presentLink(row: RequestLinkWithAgent, now: Date) {
  return {
    id: row.id,
    agent: row.agent_slug,
    title: row.title,
    message: row.message,
    max_files: row.max_files,
    max_total_size: Number(row.max_total_size),
    expires_at: iso(row.expires_at),
    max_uses: row.max_uses,
    uses: row.uses,
    status: statusOf(row, now),
    created_at: iso(row.created_at),
  };
}

/**
 * Decisions 10.2: each token takes REQUEST_TOKEN_REQUESTS a minute, counted under its digest in
 * fixed windows on the service clock; one more is 429 with Retry-After, before any other work.
 */
async function withinTokenLimit(counter: RateLimitCounter, clock: Clock, token: string, reply: FastifyReply) {
  const { name, limit, windowMs } = REQUEST_TOKEN_REQUESTS;
  const now = clock.now().getTime();
  const windowStart = Math.floor(now / windowMs) * windowMs;
  const hits = await counter.hit(`${name}:${sha256Hex(token)}`, windowStart, windowMs);
  if (hits <= limit) return;
  const retryAfter = Math.max(1, Math.ceil((windowStart + windowMs - now) / 1000));
  reply.header("Retry-After", String(retryAfter));
  throw new HttpError(
    429,
    "RATE_LIMITED",
    `this request link takes ${limit} requests a minute; retry after ${retryAfter} s`,
  );
}

export function requestRoutes({ service, settle }: RouteContext): FastifyPluginAsync {
  const { db, clock } = service;
  const deps = service.transferDeps;
  const base = service.config.publicBaseUrl;

  /** The owner's link by id, as the read model shows it; another account's is 404. */
  async function ownLink(accountId: string, id: string) {
    const row = await findRequestLink(db, accountId, id);
    if (!row) throw notFound("request link");
    return row;
  }

  return async (app) => {
    const routes = app.withTypeProvider<ZodTypeProvider>();

    routes.route({
      ...serve(api.createRequest),
      handler: async (request, reply) => {
        const caller = callerAccount(request);
        const { body } = request;
        const agent = body.agent
          ? await findConnectedAgentBySlug(db, caller.accountId, body.agent)
          : await callingAgent(db, request, caller.accountId);
        if (!agent)
          throw validationError(`agent '${body.agent}' is not a connected agent of this account`, "agent");
        const created = await createRequestLink(
          deps,
          caller,
          { id: agent.id, publicKey: agent.public_key },
          {
            terms: {
              title: body.title,
              message: body.message ?? null,
              maxFiles: body.max_files,
              maxTotalSize: body.max_total_size ?? null,
              maxUses: body.max_uses,
              askSenderName: body.ask_sender_name,
              askSenderEmail: body.ask_sender_email,
            },
            expiresInSeconds: body.expires_in ? EXPIRES_IN_SECONDS[body.expires_in] : null,
          },
        );
        await settle(created.position);
        const row = await ownLink(caller.accountId, created.link.record.requestId);
        const { id, ...link } = presentLink(row, clock.now());
        return reply
          .status(201)
          .send({ id, token: created.token, url: `${base}/r/${created.token}`, ...link });
      },
    });

    routes.route({
      ...serve(api.listRequests),
      handler: async (request) => {
        const now = clock.now();
        const rows = await listRequestLinks(db, callerAccount(request).accountId);
        return { requests: rows.map((row) => presentLink(row, now)) };
      },
    });

    routes.route({
      ...serve(api.getRequest),
      handler: async (request) =>
        presentLink(await ownLink(callerAccount(request).accountId, request.params.id), clock.now()),
    });

    routes.route({
      ...serve(api.revokeRequest),
      handler: async (request) => {
        const caller = callerAccount(request);
        const row = await ownLink(caller.accountId, request.params.id);
        const revoked = await revokeRequestLink(deps, caller, row.id);
        await settle(revoked.position);
        return presentLink(await ownLink(caller.accountId, row.id), clock.now());
      },
    });

    routes.route({
      ...serve(api.getRequestByToken),
      handler: async (request, reply) => {
        const { token } = request.params;
        await withinTokenLimit(service.rateLimits, clock, token, reply);
        const link = await linkOfToken(deps, token);
        const status = statusOf(link, clock.now());
        if (status !== "active") throw refuse("REQUEST_CLOSED", `this request link is ${status}`);
        if (link.agent_public_key === null || link.agent_key_version === null) {
          throw refuse("REQUEST_CLOSED", "the agent this link sends to no longer receives files");
        }
        // The agent's public face only: never its account, the account's e-mail or other agents.
        return {
          title: link.title,
          message: link.message,
          agent: {
            agent_id: link.agent_slug,
            name: link.agent_name,
            public_key: link.agent_public_key,
            key_version: link.agent_key_version,
            key_proof: await service.transparency.keyProof(link.agent_key_position),
          },
          max_files: link.max_files,
          max_total_size: Number(link.max_total_size),
          expires_at: iso(link.expires_at),
          ask_sender_name: link.ask_sender_name,
          ask_sender_email: link.ask_sender_email,
        };
      },
    });

    routes.route({
      ...serve(api.sendToRequest, { readsModels: false }),
      handler: async (request, reply) => {
        const { token } = request.params;
        await withinTokenLimit(service.rateLimits, clock, token, reply);
        const { body } = request;
        const created = await sendToRequest(deps, token, {
          files: body.files.map((file) => ({
            name: file.name,
            size: file.size,
            contentType: file.content_type,
            encryptionIv: file.encryption_iv,
          })),
          encryptedKey: body.encrypted_key,
          recipientKeyVersion: body.recipient_key_version ?? null,
          senderName: body.sender_name || null,
          senderEmail: body.sender_email ?? null,
        });
        // Answered from the decided transfer, like a send (read-your-writes.ts): nothing the sender
        // reads next comes from the read models, and the owner's reads wait for them anyway.
        const transferId = created.transfer.record.transferId;
        return reply.status(201).send({
          transfer_id: transferId,
          upload_urls: presentUploadLinks(created.uploads),
          confirm_url: `${base}/v1/requests/by-token/${token}/transfers/${transferId}/confirm`,
        });
      },
    });

    routes.route({
      ...serve(api.confirmRequestTransfer, { readsModels: false }),
      handler: async (request, reply) => {
        const { token, transfer_id: transferId } = request.params;
        await withinTokenLimit(service.rateLimits, clock, token, reply);
        const confirmed = await confirmRequestTransfer(deps, token, transferId);
        // The link's read (by token, no credential: it waits for nothing) must show the use counted.
        await settle(confirmed.position);
        return { transfer_id: confirmed.transfer.record.transferId, status: confirmed.transfer.status };
      },
    });
  };
}

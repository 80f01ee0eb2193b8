import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import type { Party } from "../../../domain/transfer.js";
import { deleteTransfer, downloadTransfer } from "../../command-handlers/transfers/download.js";
import { confirmTransfer, createPresignedTransfer } from "../../command-handlers/transfers/presigned.js";
import { type StagedUpload, sendTransfer, stageUpload } from "../../command-handlers/transfers/send.js";
import * as api from "../../contract/transfers.js";
import { revealRow, revealRows } from "../../privacy/reveal.js";
import { findConnectedAgentBySlug } from "../../queries/agents.js";
import { verifiedAddressee } from "../../queries/humans.js";
import { findVisibleTransfer, inboxPage, listTransfers } from "../../queries/transfers.js";
import { followReadModels, waitForRows } from "../../read-models/long-poll.js";
import { callerAccount, callerCredentialId } from "../auth.js";
import { namedAgent } from "../calling-agent.js";
import { HttpError, notFound, validationError } from "../errors.js";
import { eventFrame, requireEventStream } from "../event-stream.js";
import { acceptMultipart, multipartClientError } from "../multipart.js";
import {
  presentDownload,
  presentTransfer,
  presentUploadLinks,
  type TransferView,
  viewOf,
} from "../presenters.js";
import type { RouteContext } from "../route-context.js";
import { serve } from "../serve.js";
import { decodeCursor, encodeCursor, intentOf, parseForm } from "../transfer-schemas.js";

/** Inbox rows an event stream reads at a time. */
const STREAM_BATCH = 100;

/**
 * Where an inbox event stream starts: after Last-Event-ID (an EventSource reconnecting sends it,
 * and the URL it reconnects to still holds the first `after`), else after `after`, else at the
 * inbox's start.
 */
function streamStart(lastEventId: string | string[] | undefined, after: string | undefined): string | null {
  const header = Array.isArray(lastEventId) ? lastEventId.at(-1) : lastEventId;
  if (header && header.length > api.MAX_INBOX_POSITION)
    throw validationError(
      `Last-Event-ID is longer than ${api.MAX_INBOX_POSITION} characters`,
      "Last-Event-ID",
    );
  if (header) return decodeCursor(header, "Last-Event-ID");
  return after ? decodeCursor(after, "after") : null;
}

/** The columns of a transfer that may hold a person's sealed data (decisions 6.5, 10.3). */
const PERSONAL_COLUMNS: (keyof TransferView)[] = ["sender", "sender_email", "recipient"];

export function transferRoutes({
  service,
  settle,
  idempotency,
  eventStreams,
}: RouteContext): FastifyPluginAsync {
  const { db, clock, engine } = service;
  const deps = service.transferDeps;
  const base = service.config.publicBaseUrl;

  /** Transfers as shown: a person's sealed address opened, or "[erased]" (decisions 6.5). */
  async function present(views: TransferView[], now: Date) {
    const shown = await revealRows(deps.people, views, PERSONAL_COLUMNS);
    return shown.map((view) => presentTransfer(view, base, now));
  }

  async function presentOne(view: TransferView, now: Date) {
    return presentTransfer(await revealRow(deps.people, view, PERSONAL_COLUMNS), base, now);
  }

  /** Who asks: the caller's account and, with X-Service-Agent, the agent acting for it. */
  async function partyOf(request: FastifyRequest, accountId: string): Promise<Party> {
    return { accountId, agentId: (await namedAgent(db, request, accountId))?.id ?? null };
  }

  /**
   * Whose inbox a request reads (decisions 3.6): the agent of X-Service-Agent, else the connected
   * agent `slug` names, else every agent of the account. The listing and its event stream both ask.
   */
  async function inboxOf(request: FastifyRequest, slug: string | undefined) {
    const { accountId } = callerAccount(request);
    const agent =
      (await namedAgent(db, request, accountId)) ??
      (slug ? ((await findConnectedAgentBySlug(db, accountId, slug)) ?? null) : null);
    if (slug && !agent)
      throw validationError(`agent_id '${slug}' is not a connected agent of this account`, "agent_id");
    return { accountId, agentId: agent?.id ?? null };
  }

  return async (app) => {
    const routes = app.withTypeProvider<ZodTypeProvider>();

    await app.register(async (scope) => {
      await acceptMultipart(scope);
      const uploads = scope.withTypeProvider<ZodTypeProvider>();

      uploads.route({
        ...serve(api.sendTransfer, { readsModels: false }),
        handler: async (request, reply) => {
          if (!request.isMultipart()) {
            throw new HttpError(
              415,
              "UNSUPPORTED_MEDIA_TYPE",
              "POST /v1/transfers takes multipart/form-data",
            );
          }
          const caller = callerAccount(request);
          let staged: StagedUpload;
          try {
            const declaredLength = Number(request.headers["content-length"]);
            staged = await stageUpload(deps, caller, {
              parts: request.parts(),
              bodyBytes: Number.isSafeInteger(declaredLength) ? declaredLength : null,
              fingerprinted: request.headers["idempotency-key"] !== undefined,
            });
          } catch (error) {
            // The rest of the body is not worth reading: close the connection after the answer.
            reply.header("connection", "close");
            throw multipartClientError(error);
          }
          let sent: Awaited<ReturnType<typeof sendTransfer>>;
          try {
            if (await idempotency.apply(request, reply, staged.form.fingerprint)) {
              // A repeat of an upload already done: its copy of the files is not needed.
              await staged.discard();
              return reply;
            }
            sent = await sendTransfer(deps, caller, parseForm(staged.form.fields), staged);
          } catch (error) {
            await staged.discard();
            throw error;
          }
          return reply.status(201).send(await presentOne(viewOf(sent.transfer), clock.now()));
        },
      });
    });

    routes.route({
      ...serve(api.createPresignedTransfer),
      handler: async (request, reply) => {
        const caller = callerAccount(request);
        const { body } = request;
        const created = await createPresignedTransfer(
          deps,
          caller,
          intentOf(body),
          body.files.map((file) => ({
            name: file.name,
            size: file.size,
            contentType: file.content_type,
            encryptionIv: file.encryption_iv ?? null,
          })),
        );
        await settle(created.position);
        const id = created.transfer.record.transferId;
        return reply.status(201).send({
          id,
          upload_urls: presentUploadLinks(created.uploads),
          confirm_url: `${base}/v1/transfers/${id}/confirm`,
          expires_at: created.linksExpire.toISOString(),
        });
      },
    });

    routes.route({
      ...serve(api.confirmTransfer),
      handler: async (request) => {
        const caller = callerAccount(request);
        const by = { accountId: caller.accountId, agentId: null };
        const confirmed = await confirmTransfer(deps, by, caller, request.params.id);
        await settle(confirmed.position);
        return presentOne(viewOf(confirmed.transfer), clock.now());
      },
    });

    routes.route({
      ...serve(api.listTransfers),
      handler: async (request) => {
        const caller = callerAccount(request);
        const { direction, status, limit, offset } = request.query;
        const now = clock.now();
        const { rows, total } = await listTransfers(db, {
          accountId: caller.accountId,
          person: await verifiedAddressee(db, deps.people, caller.accountId),
          direction: direction ?? null,
          status: status ?? null,
          now,
          limit,
          offset,
        });
        return {
          transfers: await present(rows, now),
          total,
          limit,
          offset,
          has_more: offset + rows.length < total,
        };
      },
    });

    routes.route({
      ...serve(api.getInbox),
      handler: async (request) => {
        const { cursor, limit, wait } = request.query;
        const inbox = await inboxOf(request, request.query.agent_id);
        const after = cursor ? decodeCursor(cursor) : null;
        const page = () => inboxPage(db, { ...inbox, after, now: clock.now(), limit: limit + 1 });

        let rows = await page();
        if (rows.length === 0 && wait > 0) rows = await waitForRows(engine, page, wait * 1000, request.raw);
        const shown = rows.slice(0, limit);
        const last = shown[shown.length - 1];
        const now = clock.now();
        return {
          transfers: await present(shown, now),
          next_cursor: last ? encodeCursor(last.inbox_position) : (cursor ?? null),
          has_more: rows.length > limit,
        };
      },
    });

    routes.route({
      ...serve(api.streamInbox),
      handler: async (request, reply) => {
        requireEventStream(request.headers.accept);
        const inbox = await inboxOf(request, request.query.agent_id);
        let after = streamStart(request.headers["last-event-id"], request.query.after);
        const stream = await eventStreams.start(reply, callerCredentialId(request));
        // Each time the read models move: the inbox's rows past the last one sent, in order.
        const sendNew = async () => {
          for (;;) {
            const now = clock.now();
            const rows = await inboxPage(db, { ...inbox, after, now, limit: STREAM_BATCH });
            for (const row of rows) {
              // Encoded by the schema the listing's serializer uses: the same JSON, key for key.
              const item = api.Transfer.encode(await presentOne(row, now));
              stream.send(eventFrame(api.TRANSFER_RECEIVED, encodeCursor(row.inbox_position), item));
              after = row.inbox_position;
            }
            if (rows.length < STREAM_BATCH) return;
          }
        };
        const stop = followReadModels(engine, sendNew, (error) => {
          // The answer has begun: no error body can follow. The client reconnects from its last id.
          request.log.error({ err: error }, "inbox event stream failed");
          stream.end();
        });
        stream.onEnd(stop);
        return reply;
      },
    });

    routes.route({
      ...serve(api.getTransfer),
      handler: async (request) => {
        const caller = callerAccount(request);
        const person = await verifiedAddressee(db, deps.people, caller.accountId);
        const row = await findVisibleTransfer(db, request.params.id, caller.accountId, person);
        if (!row) throw notFound("transfer");
        return presentOne(row, clock.now());
      },
    });

    routes.route({
      ...serve(api.downloadTransfer, { readsModels: false }),
      handler: async (request) => {
        const caller = callerAccount(request);
        const by = await partyOf(request, caller.accountId);
        const { transfer, links } = await downloadTransfer(deps, by, caller, request.params.id);
        return presentDownload(transfer, links);
      },
    });

    routes.route({
      ...serve(api.deleteTransfer),
      handler: async (request) => {
        const caller = callerAccount(request);
        const by = { accountId: caller.accountId, agentId: null };
        const deleted = await deleteTransfer(deps, by, caller, request.params.id);
        await settle(deleted.position);
        return { id: deleted.transfer.record.transferId, status: "deleted" as const };
      },
    });
  };
}

import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import type { Party } from "../../../domain/transfer.js";
import { deleteTransfer, downloadTransfer } from "../../command-handlers/transfers/download.js";
import { confirmTransfer, createPresignedTransfer } from "../../command-handlers/transfers/presigned.js";
import { type StagedUpload, sendTransfer, stageUpload } from "../../command-handlers/transfers/send.js";
import { revealRow, revealRows } from "../../privacy/reveal.js";
import { findConnectedAgentBySlug } from "../../queries/agents.js";
import { verifiedAddressee } from "../../queries/humans.js";
import { findVisibleTransfer, inboxPage, listTransfers } from "../../queries/transfers.js";
import { waitForRows } from "../../read-models/long-poll.js";
import { callerAccount } from "../auth.js";
import { namedAgent } from "../calling-agent.js";
import { HttpError, notFound, validationError } from "../errors.js";
import { acceptMultipart, multipartClientError } from "../multipart.js";
import { presentDownload, presentTransfer, type TransferView, viewOf } from "../presenters.js";
import type { RouteContext } from "../route-context.js";
import { errors, timestamp } from "../schemas.js";
import {
  decodeCursor,
  downloadSchema,
  encodeCursor,
  inboxQuerySchema,
  inboxResponseSchema,
  intentOf,
  listQuerySchema,
  listResponseSchema,
  parseForm,
  presignedBodySchema,
  presignedResponseSchema,
  transferSchema,
} from "../transfer-schemas.js";

const idParams = z.object({ id: z.string() });

export function transferRoutes({ service, settle, idempotency }: RouteContext): FastifyPluginAsync {
  const { db, clock, engine } = service;
  const deps = service.transferDeps;
  const base = service.config.publicBaseUrl;

  /** Transfers as shown: a person's sealed address opened, or "[erased]" (decisions 6.5). */
  async function present(views: TransferView[], now: Date) {
    const shown = await revealRows(deps.people, views, ["sender", "recipient"]);
    return shown.map((view) => presentTransfer(view, base, now));
  }

  async function presentOne(view: TransferView, now: Date) {
    return presentTransfer(await revealRow(deps.people, view, ["sender", "recipient"]), base, now);
  }

  /** Who asks: the caller's account and, with X-Service-Agent, the agent acting for it. */
  async function partyOf(request: FastifyRequest, accountId: string): Promise<Party> {
    return { accountId, agentId: (await namedAgent(db, request, accountId))?.id ?? null };
  }

  return async (app) => {
    const routes = app.withTypeProvider<ZodTypeProvider>();

    await app.register(async (scope) => {
      await acceptMultipart(scope);
      const uploads = scope.withTypeProvider<ZodTypeProvider>();

      uploads.post(
        "/v1/transfers",
        {
          // Decided on the log and remembered rows; answered from the decided state.
          config: { readsModels: false },
          schema: {
            tags: ["transfers"],
            summary: "Send files (multipart/form-data, streamed; one `files` part per file)",
            consumes: ["multipart/form-data"],
            response: { 201: transferSchema, ...errors(400, 401, 403, 413, 415, 429) },
          },
        },
        async (request, reply) => {
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
      );
    });

    routes.post(
      "/v1/transfers/presigned",
      {
        schema: {
          tags: ["transfers"],
          summary: "Create a transfer whose files the client uploads straight to storage",
          body: presignedBodySchema,
          response: { 201: presignedResponseSchema, ...errors(400, 401, 403, 413, 415, 429) },
        },
      },
      async (request, reply) => {
        const caller = callerAccount(request);
        const { body } = request;
        if (body.is_encrypted && !body.encrypted_key) {
          throw validationError("encrypted_key is required when is_encrypted is true", "encrypted_key");
        }
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
          upload_urls: created.uploads.map(({ file, link }) => ({
            file_id: file.fileId,
            file_name: file.name,
            upload_url: link.url,
            method: link.method,
            headers: link.headers,
          })),
          confirm_url: `${base}/v1/transfers/${id}/confirm`,
          expires_at: created.linksExpire.toISOString(),
        });
      },
    );

    routes.post(
      "/v1/transfers/:id/confirm",
      {
        schema: {
          tags: ["transfers"],
          summary: "Activate a presigned transfer once every file is uploaded with its declared size",
          params: idParams,
          response: { 200: transferSchema, ...errors(400, 401, 404, 410, 429) },
        },
      },
      async (request) => {
        const caller = callerAccount(request);
        const by = { accountId: caller.accountId, agentId: null };
        const confirmed = await confirmTransfer(deps, by, caller, request.params.id);
        await settle(confirmed.position);
        return presentOne(viewOf(confirmed.transfer), clock.now());
      },
    );

    routes.get(
      "/v1/transfers",
      {
        schema: {
          tags: ["transfers"],
          summary: "Transfers sent or received by the caller's account, newest first",
          querystring: listQuerySchema,
          response: {
            200: listResponseSchema,
            ...errors(400, 401, 429),
          },
        },
      },
      async (request) => {
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
    );

    routes.get(
      "/v1/transfers/inbox",
      {
        schema: {
          tags: ["transfers"],
          summary: "Incoming pending and active transfers of an agent, with long-poll (`wait`)",
          querystring: inboxQuerySchema,
          response: {
            200: inboxResponseSchema,
            ...errors(400, 401, 429),
          },
        },
      },
      async (request) => {
        const caller = callerAccount(request);
        const { agent_id: slug, cursor, limit, wait } = request.query;
        const agent =
          (await namedAgent(db, request, caller.accountId)) ??
          (slug ? ((await findConnectedAgentBySlug(db, caller.accountId, slug)) ?? null) : null);
        if (slug && !agent)
          throw validationError(`agent_id '${slug}' is not a connected agent of this account`, "agent_id");
        const after = cursor ? decodeCursor(cursor) : null;
        const page = () =>
          inboxPage(db, {
            accountId: caller.accountId,
            agentId: agent?.id ?? null,
            after,
            now: clock.now(),
            limit: limit + 1,
          });

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
    );

    routes.get(
      "/v1/transfers/:id",
      {
        schema: {
          tags: ["transfers"],
          summary: "Status and metadata of a transfer (never changes the download counter)",
          params: idParams,
          response: { 200: transferSchema.extend({ expires_at: timestamp }), ...errors(401, 404, 429) },
        },
      },
      async (request) => {
        const caller = callerAccount(request);
        const person = await verifiedAddressee(db, deps.people, caller.accountId);
        const row = await findVisibleTransfer(db, request.params.id, caller.accountId, person);
        if (!row) throw notFound("transfer");
        return presentOne(row, clock.now());
      },
    );

    routes.get(
      "/v1/transfers/:id/download",
      {
        // Counted on the transfer's stream; answered from the decided state.
        config: { readsModels: false },
        schema: {
          tags: ["transfers"],
          summary: "Count one download and get signed download URLs (15 minutes, Range supported)",
          params: idParams,
          response: { 200: downloadSchema, ...errors(400, 401, 403, 404, 409, 410, 429) },
        },
      },
      async (request) => {
        const caller = callerAccount(request);
        const by = await partyOf(request, caller.accountId);
        const { transfer, links } = await downloadTransfer(deps, by, caller, request.params.id);
        return presentDownload(transfer, links);
      },
    );

    routes.delete(
      "/v1/transfers/:id",
      {
        schema: {
          tags: ["transfers"],
          summary: "Delete a transfer: its file data goes, its history stays",
          params: idParams,
          response: {
            200: z.object({ id: z.string(), status: z.literal("deleted") }),
            ...errors(401, 404, 429),
          },
        },
      },
      async (request) => {
        const caller = callerAccount(request);
        const by = { accountId: caller.accountId, agentId: null };
        const deleted = await deleteTransfer(deps, by, caller, request.params.id);
        await settle(deleted.position);
        return { id: deleted.transfer.record.transferId, status: "deleted" as const };
      },
    );
  };
}

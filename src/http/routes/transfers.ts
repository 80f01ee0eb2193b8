import fastifyMultipart from "@fastify/multipart";
import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import type { Party } from "../../../domain/transfer.js";
import { STREAM_CHUNK } from "../../blobs/filesystem.js";
import { deleteTransfer, downloadTransfer } from "../../commands/transfers/download.js";
import type { TransferIntent } from "../../commands/transfers/intent.js";
import { confirmTransfer, createPresignedTransfer } from "../../commands/transfers/presigned.js";
import { type StagedUpload, sendTransfer, stageUpload } from "../../commands/transfers/send.js";
import { findConnectedAgentBySlug } from "../../queries/agents.js";
import { findVisibleTransfer, inboxPage, listTransfers, type TransferRow } from "../../queries/transfers.js";
import { callerAccount } from "../auth.js";
import { namedAgent } from "../calling-agent.js";
import { HttpError, notFound, validationError } from "../errors.js";
import { presentTransfer, viewOf } from "../presenters.js";
import type { RouteContext } from "../route-context.js";
import { errors, timestamp } from "../schemas.js";
import {
  downloadSchema,
  EXPIRES_IN_SECONDS,
  presignedBodySchema,
  presignedResponseSchema,
  transferFormSchema,
  transferSchema,
} from "../transfer-schemas.js";

const MAX_WAIT_SECONDS = 30;

const idParams = z.object({ id: z.string() });

function encodeCursor(position: string): string {
  return Buffer.from(position).toString("base64url");
}

function decodeCursor(cursor: string): string {
  const position = Buffer.from(cursor, "base64url").toString("utf8");
  if (!/^[0-9.]+$/.test(position)) throw validationError("cursor is not one this server gave out", "cursor");
  return position;
}

/** The fields a new transfer shares between the multipart form and the presigned body, as validated. */
interface TransferInput {
  mode: TransferIntent["mode"];
  sender: string;
  recipient: string;
  recipient_account?: string | undefined;
  expires_in: keyof typeof EXPIRES_IN_SECONDS;
  max_downloads: number;
  auto_delete: boolean;
  is_encrypted: boolean;
  message?: string | undefined;
  metadata?: Record<string, unknown> | undefined;
  encrypted_key?: string | undefined;
  encryption_algorithm?: string | undefined;
  sender_signature?: string | undefined;
  recipient_key_version?: number | undefined;
}

function intentOf(input: TransferInput): TransferIntent {
  return {
    mode: input.mode,
    sender: input.sender,
    recipient: input.recipient,
    recipientAccount: input.recipient_account ?? null,
    expiresInSeconds: EXPIRES_IN_SECONDS[input.expires_in],
    maxDownloads: input.max_downloads,
    autoDelete: input.auto_delete,
    isEncrypted: input.is_encrypted,
    message: input.message ?? null,
    metadata: input.metadata ?? {},
    encryptedKey: input.encrypted_key ?? null,
    encryptionAlgorithm: input.encryption_algorithm ?? null,
    senderSignature: input.sender_signature ?? null,
    recipientKeyVersion: input.recipient_key_version ?? null,
  };
}

/** The multipart form's text fields (one value each), validated like a JSON body would be. */
function parseForm(fields: Map<string, string[]>): TransferIntent {
  const single = Object.fromEntries([...fields].map(([name, values]) => [name, values[0]]));
  const parsed = transferFormSchema.safeParse(single);
  if (!parsed.success) {
    const details = parsed.error.issues.map((issue) => ({
      path: issue.path.join("."),
      message: issue.message,
    }));
    throw validationError(`${details[0]?.path}: ${details[0]?.message}`, details);
  }
  return intentOf(parsed.data);
}

export function transferRoutes({ service, settle, idempotency }: RouteContext): FastifyPluginAsync {
  const { db, clock, engine } = service;
  const deps = service.transferDeps;
  const base = service.config.publicBaseUrl;

  /** Who asks: the caller's account and, with X-Service-Agent, the agent acting for it. */
  async function partyOf(request: FastifyRequest, accountId: string): Promise<Party> {
    return { accountId, agentId: (await namedAgent(db, request, accountId))?.id ?? null };
  }

  return async (app) => {
    const routes = app.withTypeProvider<ZodTypeProvider>();

    // Only the upload route parses multipart: elsewhere such a body is 415, like any non-JSON one.
    await app.register(async (scope) => {
      await scope.register(fastifyMultipart, {
        // Sizes are enforced while streaming, against the plan (413 FILE_TOO_LARGE), not by the parser;
        // file names keep their paths so that a path is refused, never silently cut.
        preservePath: true,
        fileHwm: STREAM_CHUNK,
        highWaterMark: STREAM_CHUNK,
        limits: {
          fileSize: Number.MAX_SAFE_INTEGER,
          files: 100,
          fields: 50,
          fieldSize: 64 * 1024,
          parts: 200,
        },
      });
      const uploads = scope.withTypeProvider<ZodTypeProvider>();

      uploads.post(
        "/v1/transfers",
        {
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
            staged = await stageUpload(
              deps,
              caller,
              request.parts(),
              request.headers["idempotency-key"] !== undefined,
            );
          } catch (error) {
            // The rest of the body is not worth reading: close the connection after the answer.
            reply.header("connection", "close");
            throw error;
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
          await settle(sent.position);
          return reply.status(201).send(presentTransfer(viewOf(sent.transfer), base, clock.now()));
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
        return presentTransfer(viewOf(confirmed.transfer), base, clock.now());
      },
    );

    routes.get(
      "/v1/transfers",
      {
        schema: {
          tags: ["transfers"],
          summary: "Transfers sent or received by the caller's account, newest first",
          querystring: z.object({
            direction: z.enum(["sent", "received"]).optional(),
            status: z.enum(["pending", "pending_recipient", "active", "downloaded", "expired"]).optional(),
            limit: z.coerce.number().int().min(1).max(100).default(20),
            offset: z.coerce.number().int().min(0).default(0),
          }),
          response: {
            200: z.object({
              transfers: z.array(transferSchema),
              total: z.number().int(),
              limit: z.number().int(),
              offset: z.number().int(),
              has_more: z.boolean(),
            }),
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
          direction: direction ?? null,
          status: status ?? null,
          now,
          limit,
          offset,
        });
        return {
          transfers: rows.map((row) => presentTransfer(row, base, now)),
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
          querystring: z.object({
            agent_id: z.string().optional(),
            cursor: z.string().max(200).optional(),
            limit: z.coerce.number().int().min(1).max(100).default(20),
            wait: z.coerce.number().min(0).max(MAX_WAIT_SECONDS).default(0),
          }),
          response: {
            200: z.object({
              transfers: z.array(transferSchema),
              next_cursor: z.string().nullable(),
              has_more: z.boolean(),
            }),
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
        if (rows.length === 0 && wait > 0) rows = await waitForInbox(page, wait * 1000, request);
        const shown = rows.slice(0, limit);
        const last = shown[shown.length - 1];
        const now = clock.now();
        return {
          transfers: shown.map((row) => presentTransfer(row, base, now)),
          next_cursor: last ? encodeCursor(last.inbox_position) : (cursor ?? null),
          has_more: rows.length > limit,
        };
      },
    );

    /** Long-poll: query again each time the transfers projection moves, until rows arrive or time is up. */
    function waitForInbox(page: () => Promise<TransferRow[]>, ms: number, request: FastifyRequest) {
      return new Promise<TransferRow[]>((resolve, reject) => {
        let checking = false;
        let again = false;
        const finish = (rows: TransferRow[]) => {
          clearTimeout(timer);
          stop();
          request.raw.off("close", onClose);
          resolve(rows);
        };
        const check = async () => {
          if (checking) {
            again = true;
            return;
          }
          checking = true;
          try {
            do {
              again = false;
              const rows = await page();
              if (rows.length > 0) return finish(rows);
            } while (again);
          } catch (error) {
            clearTimeout(timer);
            stop();
            reject(error);
          } finally {
            checking = false;
          }
        };
        const onClose = () => finish([]);
        const stop = engine.onAdvance(() => void check());
        const timer = setTimeout(() => finish([]), ms);
        request.raw.once("close", onClose);
        void check();
      });
    }

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
        const row = await findVisibleTransfer(db, request.params.id, caller.accountId);
        if (!row) throw notFound("transfer");
        return presentTransfer(row, base, clock.now());
      },
    );

    routes.get(
      "/v1/transfers/:id/download",
      {
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
        const { position, transfer, links } = await downloadTransfer(deps, by, caller, request.params.id);
        await settle(position);
        const { record } = transfer;
        const e = record.encryption;
        return {
          id: record.transferId,
          files: links.map(({ file, url }) => ({
            file_name: file.name,
            download_url: url,
            size: file.size,
            encryption_iv: file.encryptionIv,
          })),
          downloads: transfer.downloads,
          downloads_remaining: record.maxDownloads - transfer.downloads,
          expires_at: record.expiresAt,
          auto_delete: record.autoDelete,
          is_encrypted: record.isEncrypted,
          encrypted_key: e.encryptedKey,
          encryption_algorithm: e.algorithm,
          recipient_key_version: e.recipientKeyVersion,
          sender_signature: e.senderSignature,
          channel_id: null,
          encryption_salt: null,
          sender_public_key: e.senderPublicKey,
          recipient_public_key: e.recipientPublicKey,
        };
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

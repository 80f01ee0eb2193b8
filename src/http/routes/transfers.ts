import { randomBytes } from "node:crypto";
import fastifyMultipart from "@fastify/multipart";
import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import type { TransferEncryption, TransferFile, TransferTerms } from "../../../domain/transfer.js";
import { STREAM_CHUNK } from "../../blobs/filesystem.js";
import { blobKey } from "../../blobs/keys.js";
import { changeTransfer, createTransfer, storageInUseNow } from "../../commands/transfers.js";
import { limitsOf } from "../../plans/catalog.js";
import { findAccount } from "../../queries/accounts.js";
import { findConnectedAgentBySlug } from "../../queries/agents.js";
import { findVisibleTransfer, inboxPage, listTransfers, type TransferRow } from "../../queries/transfers.js";
import { seal } from "../../security/secrets.js";
import { callerAccount } from "../auth.js";
import { namedAgent } from "../calling-agent.js";
import { HttpError, notFound, validationError } from "../errors.js";
import { type ResolvedParties, resolveParties } from "../parties.js";
import { presentTransfer } from "../presenters.js";
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
import {
  checkFileName,
  fileTooLarge,
  newFileId,
  newTransferId,
  receiveMultipart,
} from "../transfer-upload.js";

/** Decisions 3.16: download links live 15 minutes; upload links an hour, never past the transfer. */
const DOWNLOAD_LINK_MS = 15 * 60 * 1000;
const UPLOAD_LINK_MS = 60 * 60 * 1000;
const MAX_WAIT_SECONDS = 30;
/** The purpose a transfer's at-rest data key is sealed for under the server key. */
export const DATA_KEY_PURPOSE = "transfer-data-key";

const idParams = z.object({ id: z.string() });

function encodeCursor(position: string): string {
  return Buffer.from(position).toString("base64url");
}

function decodeCursor(cursor: string): string {
  const position = Buffer.from(cursor, "base64url").toString("utf8");
  if (!/^[0-9.]+$/.test(position)) throw validationError("cursor is not one this server gave out", "cursor");
  return position;
}

interface TermsInput {
  expires_in: keyof typeof EXPIRES_IN_SECONDS;
  max_downloads: number;
  auto_delete: boolean;
  is_encrypted: boolean;
  message?: string | undefined;
  metadata?: Record<string, unknown> | undefined;
}

interface EncryptionInput {
  encrypted_key?: string | undefined;
  encryption_algorithm?: string | undefined;
  sender_signature?: string | undefined;
  recipient_key_version?: number | undefined;
}

/** Decisions 3.20: the client's encryption material, stored as given, plus the parties' public keys. */
function encryptionOf(
  input: EncryptionInput & { is_encrypted: boolean },
  resolved: ResolvedParties,
): TransferEncryption {
  const encrypted = input.is_encrypted;
  return {
    encryptedKey: encrypted ? (input.encrypted_key ?? null) : null,
    algorithm: encrypted ? (input.encryption_algorithm ?? "AES-256-GCM") : null,
    senderSignature: input.sender_signature ?? null,
    recipientKeyVersion: encrypted
      ? (input.recipient_key_version ?? resolved.recipientAgent?.key_version ?? null)
      : null,
    senderPublicKey: encrypted ? (resolved.senderAgent?.public_key ?? null) : null,
    recipientPublicKey: null,
  };
}

export function transferRoutes({ service, settle, idempotency }: RouteContext): FastifyPluginAsync {
  const { db, deps, config, clock, blobs, engine } = service;
  const base = config.publicBaseUrl;

  async function planOf(accountId: string) {
    const account = await findAccount(db, accountId);
    if (!account) throw new HttpError(401, "UNAUTHORIZED", "the key's account no longer exists");
    return limitsOf(account.plan);
  }

  function termsOf(input: TermsInput, maxRetentionSeconds: number | null, now: Date): TransferTerms {
    const seconds = EXPIRES_IN_SECONDS[input.expires_in];
    if (maxRetentionSeconds !== null && seconds > maxRetentionSeconds) {
      throw validationError(
        `expires_in ${input.expires_in} is beyond the plan's retention of ${maxRetentionSeconds / 3600} hours`,
        "expires_in",
      );
    }
    return {
      maxDownloads: input.max_downloads,
      autoDelete: input.auto_delete,
      isEncrypted: input.is_encrypted,
      message: input.message ?? null,
      metadata: input.metadata ?? {},
      expiresAt: new Date(now.getTime() + seconds * 1000).toISOString(),
    };
  }

  async function settledTransfer(id: string, accountId: string): Promise<TransferRow> {
    const row = await findVisibleTransfer(db, id, accountId);
    if (!row) throw new Error(`transfer ${id} missing from the read model after its write settled`);
    return row;
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
          const limits = await planOf(caller.accountId);
          const transferId = newTransferId();
          const storageLeft =
            limits.storageBytes === null
              ? null
              : Math.max(0, limits.storageBytes - (await storageInUseNow(deps, caller.accountId)));
          let form: Awaited<ReturnType<typeof receiveMultipart>>;
          try {
            // A transfer held for a person without a receiving key is encrypted at rest as it streams in.
            form = await receiveMultipart(
              request,
              blobs,
              transferId,
              { maxFileSize: limits.maxFileSize, storageLeft },
              (fields) => (fields.get("mode")?.[0] === "agent-to-human" ? randomBytes(32) : null),
            );
          } catch (error) {
            // The rest of the body is not worth reading: close the connection after the answer.
            reply.header("connection", "close");
            throw error;
          }
          const keys = form.files.map((file) => blobKey(transferId, file.fileId));
          try {
            if (await idempotency.apply(request, reply, form.fingerprint)) {
              // A repeat of an upload already done: its copy of the files is not needed.
              await blobs.delete(keys);
              return reply;
            }
            const single = Object.fromEntries([...form.fields].map(([name, values]) => [name, values[0]]));
            const parsed = transferFormSchema.safeParse(single);
            if (!parsed.success) {
              const details = parsed.error.issues.map((issue) => ({
                path: issue.path.join("."),
                message: issue.message,
              }));
              throw validationError(`${details[0]?.path}: ${details[0]?.message}`, details);
            }
            if (form.files.length === 0)
              throw validationError("at least one `files` part is required", "files");
            const ivs = form.fields.get("encryption_iv") ?? [];
            const files: TransferFile[] = form.files.map((file, index) => ({
              ...file,
              encryptionIv: ivs[index] ?? null,
            }));
            const body = parsed.data;
            const resolved = await resolveParties(db, caller.accountId, {
              mode: body.mode,
              sender: body.sender,
              recipient: body.recipient,
              recipientAccount: body.recipient_account ?? null,
            });
            if (resolved.human && !form.dataKey) {
              throw validationError(
                "for agent-to-human transfers send the form fields before the files, so they can be encrypted as they arrive",
                "files",
              );
            }
            const now = clock.now();
            const result = await createTransfer(
              deps,
              {
                transferId,
                presigned: false,
                parties: resolved.parties,
                human: resolved.human,
                atRest: form.dataKey
                  ? { wrappedDataKey: seal(deps.serverKey, DATA_KEY_PURPOSE, form.dataKey) }
                  : null,
                terms: termsOf(body, limits.maxRetentionSeconds, now),
                files,
                encryption: encryptionOf(body, resolved),
              },
              caller,
            );
            await settle(result.position);
          } catch (error) {
            await blobs.delete(keys);
            throw error;
          }
          return reply
            .status(201)
            .send(presentTransfer(await settledTransfer(transferId, caller.accountId), base, clock.now()));
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
        const body = request.body;
        const limits = await planOf(caller.accountId);
        body.files.forEach((file, index) => {
          checkFileName(file.name, `files.${index}.name`);
          if (limits.maxFileSize !== null && file.size > limits.maxFileSize) {
            throw fileTooLarge(
              `'${file.name}' is over the plan's maximum file size of ${limits.maxFileSize} bytes`,
            );
          }
        });
        if (body.is_encrypted && !body.encrypted_key) {
          throw validationError("encrypted_key is required when is_encrypted is true", "encrypted_key");
        }
        const resolved = await resolveParties(db, caller.accountId, {
          mode: body.mode,
          sender: body.sender,
          recipient: body.recipient,
          recipientAccount: body.recipient_account ?? null,
        });
        if (resolved.human) {
          throw validationError(
            "agent-to-human transfers go through POST /v1/transfers, so the server can encrypt them for the recipient",
            "mode",
          );
        }
        const now = clock.now();
        const transferId = newTransferId();
        const terms = termsOf(body, limits.maxRetentionSeconds, now);
        const files: TransferFile[] = body.files.map((file) => ({
          fileId: newFileId(),
          name: file.name,
          size: file.size,
          type: file.content_type,
          encryptionIv: file.encryption_iv ?? null,
        }));
        const result = await createTransfer(
          deps,
          {
            transferId,
            presigned: true,
            parties: resolved.parties,
            human: null,
            atRest: null,
            terms,
            files,
            encryption: encryptionOf(body, resolved),
          },
          caller,
        );
        await settle(result.position);
        const linksExpire = new Date(Math.min(now.getTime() + UPLOAD_LINK_MS, Date.parse(terms.expiresAt)));
        const uploadUrls = await Promise.all(
          files.map(async (file) => {
            const upload = await blobs.uploadUrl(blobKey(transferId, file.fileId), {
              size: file.size,
              contentType: file.type,
              expiresAt: linksExpire,
            });
            return {
              file_id: file.fileId,
              file_name: file.name,
              upload_url: upload.url,
              method: upload.method,
              headers: upload.headers,
            };
          }),
        );
        return reply.status(201).send({
          id: transferId,
          upload_urls: uploadUrls,
          confirm_url: `${base}/v1/transfers/${transferId}/confirm`,
          expires_at: linksExpire.toISOString(),
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
        const row = await findVisibleTransfer(db, request.params.id, caller.accountId);
        if (!row || row.sender_account_id !== caller.accountId) throw notFound("transfer");
        const uploaded: Record<string, number | null> = {};
        for (const file of row.files) {
          uploaded[file.fileId] = (await blobs.stat(blobKey(row.id, file.fileId)))?.size ?? null;
        }
        const result = await changeTransfer(deps, row.id, { type: "ConfirmUpload", uploaded }, caller);
        await settle(result.position);
        return presentTransfer(await settledTransfer(row.id, caller.accountId), base, clock.now());
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
        const row = await findVisibleTransfer(db, request.params.id, caller.accountId);
        if (!row) throw notFound("transfer");
        if (row.recipient_account_id !== caller.accountId) {
          throw new HttpError(403, "FORBIDDEN", "only the recipient side may download a transfer");
        }
        const agent = await namedAgent(db, request, caller.accountId);
        if (agent && row.recipient_agent_id && agent.id !== row.recipient_agent_id) {
          throw new HttpError(403, "FORBIDDEN", "this transfer is addressed to another agent");
        }
        const result = await changeTransfer(
          deps,
          row.id,
          {
            type: "RecordDownload",
            downloaderAgentId: agent?.id ?? row.recipient_agent_id,
            linkLifetimeMs: DOWNLOAD_LINK_MS,
          },
          caller,
        );
        await settle(result.position);
        const linksExpire = new Date(clock.now().getTime() + DOWNLOAD_LINK_MS);
        const files = await Promise.all(
          row.files.map(async (file) => ({
            file_name: file.name,
            download_url: await blobs.downloadUrl(blobKey(row.id, file.fileId), {
              expiresAt: linksExpire,
              fileName: file.name,
              contentType: file.type,
            }),
            size: file.size,
            encryption_iv: file.encryptionIv,
          })),
        );
        const e = row.encryption;
        return {
          id: row.id,
          files,
          downloads: result.state.downloads,
          downloads_remaining: result.state.maxDownloads - result.state.downloads,
          expires_at: new Date(row.expires_at).toISOString(),
          auto_delete: row.auto_delete,
          is_encrypted: row.is_encrypted,
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
        const row = await findVisibleTransfer(db, request.params.id, caller.accountId);
        if (!row) throw notFound("transfer");
        const result = await changeTransfer(deps, row.id, { type: "DeleteTransfer" }, caller);
        await settle(result.position);
        return { id: row.id, status: "deleted" as const };
      },
    );
  };
}

import { z } from "zod";
import { TRANSFER_MODES } from "../../domain/transfer.js";
import type { TransferIntent } from "../command-handlers/transfers/intent.js";
import { validationError } from "./errors.js";
import { jsonProblem } from "./json-guard.js";
import { longTextSchema, metadataSchema, timestamp } from "./schemas.js";

/** Spec 4.9 / section 8: the allowed lifetimes, capped by the plan's retention (decisions 3.13). */
export const EXPIRES_IN_SECONDS = {
  "1h": 3600,
  "12h": 12 * 3600,
  "24h": 24 * 3600,
  "7d": 7 * 86400,
  "14d": 14 * 86400,
  "30d": 30 * 86400,
  "90d": 90 * 86400,
} as const;
export const expiresInSchema = z.enum(Object.keys(EXPIRES_IN_SECONDS) as [keyof typeof EXPIRES_IN_SECONDS]);

/** Form fields arrive as text; booleans and numbers are read from it (decisions 3.21). */
const formBoolean = z
  .enum(["true", "false", "1", "0"])
  .transform((value) => value === "true" || value === "1");
const formInteger = z
  .string()
  .regex(/^-?\d+$/, "must be a whole number")
  .transform((value) => Number(value));
const partySchema = z.string().min(1).max(320);

/**
 * A file's content type goes back out as the Content-Type header of its download: `type/subtype`
 * with optional parameters, printable ASCII only, so no CR, LF or control character can reach a header.
 */
const MEDIA_TYPE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+\/[!#$%&'*+.^_`|~0-9A-Za-z-]+(\s*;[\x20-\x7e]*)?$/;
const MEDIA_TYPE_RULE = "must be a media type (type/subtype[; parameters]) in printable ASCII";
export const isMediaType = (text: string) => text.length <= 255 && MEDIA_TYPE.test(text);
const encryptionFields = {
  encrypted_key: z.string().max(4096).optional(),
  encryption_algorithm: z.literal("AES-256-GCM").optional(),
  sender_signature: z.string().max(4096).optional(),
};

export const transferFormSchema = z.object({
  sender: partySchema,
  recipient: partySchema,
  recipient_account: z.string().max(320).optional(),
  mode: z.enum(TRANSFER_MODES),
  is_encrypted: formBoolean.default(false),
  message: longTextSchema.optional(),
  auto_delete: formBoolean.default(true),
  max_downloads: formInteger.pipe(z.number().int().min(1).max(1000)).default(10),
  expires_in: expiresInSchema.default("24h"),
  recipient_key_version: formInteger.pipe(z.number().int().min(1)).optional(),
  metadata: z
    .string()
    .transform((text, ctx) => {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        ctx.addIssue({ code: "custom", message: "must be a JSON object" });
        return z.NEVER;
      }
    })
    .superRefine((value, ctx) => {
      const problem = jsonProblem(value);
      if (problem) ctx.addIssue({ code: "custom", message: problem.message, fatal: true });
    })
    .pipe(metadataSchema)
    .optional(),
  ...encryptionFields,
});

export const presignedBodySchema = z.object({
  mode: z.enum(TRANSFER_MODES),
  sender: partySchema,
  recipient: partySchema,
  recipient_account: z.string().max(320).optional(),
  files: z
    .array(
      z.object({
        name: z.string(),
        size: z.number().int().min(0),
        content_type: z.string().refine(isMediaType, MEDIA_TYPE_RULE).default("application/octet-stream"),
        encryption_iv: z.string().max(256).optional(),
      }),
    )
    .min(1)
    .max(100),
  expires_in: expiresInSchema.default("24h"),
  max_downloads: z.number().int().min(1).max(1000).default(10),
  message: longTextSchema.optional(),
  metadata: metadataSchema.optional(),
  is_encrypted: z.boolean().default(false),
  auto_delete: z.boolean().default(false),
  recipient_key_version: z.number().int().min(1).optional(),
  ...encryptionFields,
});

export const transferSchema = z.object({
  id: z.string(),
  url: z.string(),
  api_url: z.string(),
  status: z.enum(["pending", "pending_recipient", "active", "downloaded", "expired", "deleted"]),
  pending_reason: z.string().nullable(),
  mode: z.enum(TRANSFER_MODES),
  sender: z.string(),
  recipient: z.string(),
  files: z.array(z.object({ name: z.string(), size: z.number().int(), type: z.string() })),
  file_count: z.number().int(),
  total_size: z.number().int(),
  max_downloads: z.number().int(),
  downloads: z.number().int(),
  is_encrypted: z.boolean(),
  auto_delete: z.boolean(),
  message: z.string().nullable(),
  created_at: timestamp,
  expires_at: timestamp,
});

export const downloadSchema = z.object({
  id: z.string(),
  files: z.array(
    z.object({
      file_name: z.string(),
      download_url: z.string(),
      size: z.number().int(),
      encryption_iv: z.string().nullable(),
    }),
  ),
  downloads: z.number().int(),
  downloads_remaining: z.number().int(),
  expires_at: timestamp,
  auto_delete: z.boolean(),
  is_encrypted: z.boolean(),
  encrypted_key: z.string().nullable(),
  encryption_algorithm: z.string().nullable(),
  recipient_key_version: z.number().int().nullable(),
  sender_signature: z.string().nullable(),
  channel_id: z.string().nullable(),
  encryption_salt: z.string().nullable(),
  sender_public_key: z.string().nullable(),
  recipient_public_key: z.string().nullable(),
});

export const presignedResponseSchema = z.object({
  id: z.string(),
  upload_urls: z.array(
    z.object({
      file_id: z.string(),
      file_name: z.string(),
      upload_url: z.string(),
      method: z.literal("PUT"),
      headers: z.record(z.string(), z.string()),
    }),
  ),
  confirm_url: z.string(),
  expires_at: timestamp,
});

export function encodeCursor(position: string): string {
  return Buffer.from(position).toString("base64url");
}

export function decodeCursor(cursor: string): string {
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

export function intentOf(input: TransferInput): TransferIntent {
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
export function parseForm(fields: Map<string, string[]>): TransferIntent {
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

/** Decisions 3.11: the longest an inbox long-poll waits. */
const MAX_WAIT_SECONDS = 30;

export const listQuerySchema = z.object({
  direction: z.enum(["sent", "received"]).optional(),
  status: z.enum(["pending", "pending_recipient", "active", "downloaded", "expired"]).optional(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
  offset: z.coerce.number().int().min(0).default(0),
});

export const listResponseSchema = z.object({
  transfers: z.array(transferSchema),
  total: z.number().int(),
  limit: z.number().int(),
  offset: z.number().int(),
  has_more: z.boolean(),
});

export const inboxQuerySchema = z.object({
  agent_id: z.string().optional(),
  cursor: z.string().max(200).optional(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
  wait: z.coerce.number().min(0).max(MAX_WAIT_SECONDS).default(0),
});

export const inboxResponseSchema = z.object({
  transfers: z.array(transferSchema),
  next_cursor: z.string().nullable(),
  has_more: z.boolean(),
});

import { z } from "zod";
import { TRANSFER_MODES } from "../../domain/transfer.js";
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

import { z } from "zod";
import type { TransferIntent } from "../command-handlers/transfers/intent.js";
import { metadataSchema } from "../contract/common.js";
import { EXPIRES_IN_SECONDS, TransferForm } from "../contract/transfers.js";
import { validationError } from "./errors.js";
import { jsonProblem } from "./json-guard.js";

/** The multipart form as the server reads it: `metadata` is text that must hold a JSON object it can store. */
const transferFormSchema = TransferForm.extend({
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
});

export function encodeCursor(position: string): string {
  return Buffer.from(position).toString("base64url");
}

/** The position a cursor (or an event's id) names; `field` is where it came from, for the 400. */
export function decodeCursor(cursor: string, field = "cursor"): string {
  const position = Buffer.from(cursor, "base64url").toString("utf8");
  if (!/^[0-9.]+$/.test(position)) throw validationError(`${field} is not one this server gave out`, field);
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
    terms: {
      maxDownloads: input.max_downloads,
      autoDelete: input.auto_delete,
      isEncrypted: input.is_encrypted,
      message: input.message ?? null,
      metadata: input.metadata ?? {},
      expiresInSeconds: EXPIRES_IN_SECONDS[input.expires_in],
    },
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

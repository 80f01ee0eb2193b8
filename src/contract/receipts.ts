import { z } from "zod";
import { count, IdParams, list, named, timestamp } from "./common.js";
import { operation } from "./operation.js";

/** Decisions 9.5: receipts a recipient's client signs after a verified receive. */

const sha256Hex = z.string().regex(/^[0-9a-f]{64}$/, "lowercase hex SHA-256");

export const Receipt = named(
  "Receipt",
  z.strictObject({
    type: z.literal("handoff.receipt/v1"),
    transfer_id: z.string().min(1).max(100),
    recipient: z.string().min(1).max(100).describe("The recipient agent's uuid"),
    sender_signature: z
      .string()
      .max(200)
      .nullable()
      .describe("The sender's signature (decisions 5.4), or null"),
    files: z
      .array(
        z.strictObject({
          name: z.string().min(1).max(1024),
          size: z.number().int().min(0),
          sha256: sha256Hex.describe("Of the plaintext written"),
          stored_sha256: sha256Hex.describe("Of the bytes downloaded, as stored"),
        }),
      )
      .min(1)
      .max(10_000),
    shield: z
      .strictObject({ level: z.string().max(50), verdict: z.string().max(50) })
      .nullable()
      .describe("Shield's level and verdict (decisions 5.6), or null when it was off"),
    received_at: timestamp,
  }),
  { description: "What the recipient received; its RFC 8785 bytes are what the agent signs" },
);

const signature = z
  .string()
  .regex(/^[A-Za-z0-9+/]{86}==$/, "base64 of a 64-byte Ed25519 signature")
  .describe("Ed25519 signature of the receipt's canonical JSON by the recipient agent's signing key");

export const PostedReceipt = named("PostedReceipt", z.object({ receipt: Receipt, signature }), {
  description: "A signed receipt",
});

export const RecordedReceipt = named(
  "RecordedReceipt",
  z.object({
    position: z.string(),
    leaf_index: count
      .nullable()
      .describe("Its leaf in the transparency log; null if the log has not reached it yet"),
  }),
  { description: "Where the receipt stands in the log" },
);

export const ReceiptEntry = named(
  "ReceiptEntry",
  z.object({
    receipt: z.record(z.string(), z.unknown()),
    signature: z.string(),
    position: z.string(),
    leaf_index: count.nullable(),
  }),
  { description: "A recorded receipt, as posted" },
);

export const postReceipt = operation({
  operationId: "postReceipt",
  method: "POST",
  path: "/v1/transfers/:id/receipts",
  security: "apiKey",
  tag: "transfers",
  summary: "The recipient agent's signed receipt of a transfer it received (X-Service-Agent picks the agent)",
  description:
    "Checked against the agent's current signing key, the transfer's recipient and the stored bytes' hashes: 400 RECEIPT_INVALID otherwise (403 for another account's agent), nothing recorded.",
  params: IdParams,
  body: PostedReceipt,
  responses: { 201: RecordedReceipt },
  errors: [403, 404],
});

export const listReceipts = operation({
  operationId: "listReceipts",
  method: "GET",
  path: "/v1/transfers/:id/receipts",
  security: "apiKey",
  tag: "transfers",
  summary: "A transfer's recorded receipts, for either party",
  params: IdParams,
  responses: { 200: list("ReceiptList", "receipts", ReceiptEntry, "Receipts in log order") },
  errors: [404],
});

export const receiptOperations = [postReceipt, listReceipts];

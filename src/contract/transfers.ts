import { z } from "zod";
import { MAX_FILES_PER_TRANSFER } from "../../domain/file-names.js";
import {
  type TransferStatus as DomainTransferStatus,
  TRANSFER_MODES,
  type TransferMode as TransferModeName,
} from "../../domain/transfer.js";
import {
  byteCount,
  count,
  cursorPage,
  IdParams,
  longTextSchema,
  metadataSchema,
  named,
  offsetPage,
  timestamp,
} from "./common.js";
import { operation, reply } from "./operation.js";

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
export type ExpiresIn = keyof typeof EXPIRES_IN_SECONDS;
export const ExpiresIn = named("ExpiresIn", z.enum(Object.keys(EXPIRES_IN_SECONDS) as [ExpiresIn]), {
  description: "How long the transfer lives, capped by the plan's retention",
});

export const TransferMode = named("TransferMode", z.enum(TRANSFER_MODES), {
  description:
    "Who sends to whom: an agent or a person on either side; `request`: someone answering a request link",
});

/** The modes a caller asks for: `request` transfers come through a request link only (decisions 10.2). */
const SEND_MODES = [
  "agent-to-agent",
  "agent-to-human",
  "human-to-agent",
] as const satisfies readonly TransferModeName[];
export const SendMode = named("SendMode", z.enum(SEND_MODES), {
  description: "Who sends to whom: an agent or a person on either side",
});

const TRANSFER_STATUSES = [
  "pending",
  "pending_recipient",
  "active",
  "downloaded",
  "expired",
  "deleted",
] as const satisfies readonly DomainTransferStatus[];
export const TransferStatus = named("TransferStatus", z.enum(TRANSFER_STATUSES), {
  description:
    "pending: files still uploading; pending_recipient: waiting for the person's receiving key; active: downloadable; downloaded: no downloads left; expired; deleted",
});

/** Decisions 3.11: the longest an inbox long-poll waits. */
export const MAX_WAIT_SECONDS = 30;

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
  encrypted_key: z.string().max(4096).optional().describe("The file key, sealed for the recipient (base64)"),
  encryption_algorithm: z.literal("AES-256-GCM").optional(),
  sender_signature: z.string().max(4096).optional().describe("The sender's Ed25519 signature (base64)"),
};
const sender = partySchema.describe("The sending agent's slug, or the sender's e-mail address");
const recipient = partySchema.describe("The receiving agent's slug, or a person's e-mail address");
const recipientAccount = z
  .string()
  .max(320)
  .optional()
  .describe("The recipient's account (id or e-mail), when the slug is on several connected accounts");

/**
 * The text fields of POST /v1/transfers, as the form sends them. `metadata` is a JSON object as text;
 * the server checks what it holds (src/http/transfer-schemas.ts).
 */
export const TransferForm = named(
  "TransferForm",
  z.object({
    sender,
    recipient,
    recipient_account: recipientAccount,
    mode: SendMode,
    is_encrypted: formBoolean.default(false),
    message: longTextSchema.optional(),
    auto_delete: formBoolean.default(true).describe("Delete the files once the last download is counted"),
    max_downloads: formInteger.pipe(z.number().int().min(1).max(1000)).default(10),
    expires_in: ExpiresIn.default("24h"),
    recipient_key_version: formInteger.pipe(z.number().int().min(1)).optional(),
    metadata: z.string().optional().describe("A JSON object, at most 16 KB"),
    ...encryptionFields,
  }),
  { description: "The fields of a multipart transfer; each file is a `files` part" },
);

export const PresignedTransferRequest = named(
  "PresignedTransferRequest",
  z.object({
    mode: SendMode,
    sender,
    recipient,
    recipient_account: recipientAccount,
    files: z
      .array(
        z.object({
          name: z.string(),
          size: byteCount,
          content_type: z.string().refine(isMediaType, MEDIA_TYPE_RULE).default("application/octet-stream"),
          encryption_iv: z.string().max(256).optional(),
        }),
      )
      .min(1)
      .max(MAX_FILES_PER_TRANSFER),
    expires_in: ExpiresIn.default("24h"),
    max_downloads: z.number().int().min(1).max(1000).default(10),
    message: longTextSchema.optional(),
    metadata: metadataSchema.optional(),
    is_encrypted: z.boolean().default(false),
    auto_delete: z.boolean().default(false),
    recipient_key_version: z.number().int().min(1).optional(),
    ...encryptionFields,
  }),
  {
    description: "A transfer whose files the client uploads itself to the signed links of the answer",
    example: {
      mode: "agent-to-agent",
      sender: "report-bot",
      recipient: "archive-bot",
      files: [{ name: "report.pdf", size: 52431, content_type: "application/pdf" }],
    },
  },
);

/**
 * The sender of a `request` transfer (decisions 10.3): what the person answering the link typed,
 * never checked by the service, so `verified` is always false and clients show it as such.
 */
export const LinkSender = named(
  "LinkSender",
  z.object({
    kind: z.literal("link"),
    name: z.string().nullable().describe("The name the sender typed, unverified; null when none"),
    email: z.string().nullable().describe("The e-mail address the sender typed, unverified; null when none"),
    verified: z.literal(false),
  }),
  { description: "Someone without an account who answered a request link: what they typed, unverified" },
);

export const TransferFileInfo = named(
  "TransferFileInfo",
  z.object({ name: z.string(), size: byteCount, type: z.string().describe("Media type") }),
  { description: "One file of a transfer" },
);

export const Transfer = named(
  "Transfer",
  z.object({
    id: z.string(),
    url: z.string(),
    api_url: z.string(),
    status: TransferStatus,
    pending_reason: z.string().nullable(),
    mode: TransferMode,
    request_id: z
      .string()
      .nullable()
      .describe("Mode `request`: the request link it came through (decisions 10.3); else null"),
    sender: z.union([z.string(), LinkSender]),
    recipient: z.string(),
    files: z.array(TransferFileInfo),
    file_count: count,
    total_size: byteCount,
    max_downloads: count,
    downloads: count,
    is_encrypted: z.boolean(),
    auto_delete: z.boolean(),
    message: z.string().nullable(),
    created_at: timestamp,
    expires_at: timestamp,
  }),
  {
    description: "A transfer (spec 2.3)",
    example: {
      id: "tr_3f9a1c",
      url: "http://127.0.0.1:8080/t/tr_3f9a1c",
      api_url: "http://127.0.0.1:8080/v1/transfers/tr_3f9a1c",
      status: "active",
      pending_reason: null,
      mode: "agent-to-agent",
      request_id: null,
      sender: "report-bot",
      recipient: "archive-bot",
      files: [{ name: "report.pdf", size: 52431, type: "application/pdf" }],
      file_count: 1,
      total_size: 52431,
      max_downloads: 10,
      downloads: 0,
      is_encrypted: true,
      auto_delete: true,
      message: null,
      created_at: "2026-01-01T12:00:00.000Z",
      expires_at: "2026-01-02T12:00:00.000Z",
    },
  },
);

export const TransferPage = offsetPage(
  "TransferPage",
  "transfers",
  Transfer,
  "A page of transfers, newest first",
);

export const InboxPage = cursorPage("InboxPage", "transfers", Transfer, "Incoming transfers of an agent");

export const TransferDownload = named(
  "TransferDownload",
  z.object({
    id: z.string(),
    files: z.array(
      z.object({
        file_name: z.string(),
        download_url: z.string().describe("Signed link, valid 15 minutes; honours Range"),
        size: byteCount,
        encryption_iv: z.string().nullable(),
      }),
    ),
    downloads: count,
    downloads_remaining: count,
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
  }),
  {
    description: "A counted download: signed links to each file and what decrypts them",
    example: {
      id: "tr_3f9a1c",
      files: [
        {
          file_name: "report.pdf",
          download_url: "http://127.0.0.1:8080/v1/files/eyJrIjoi",
          size: 52431,
          encryption_iv: null,
        },
      ],
      downloads: 1,
      downloads_remaining: 9,
      expires_at: "2026-01-02T12:00:00.000Z",
      auto_delete: true,
      is_encrypted: false,
      encrypted_key: null,
      encryption_algorithm: null,
      recipient_key_version: null,
      sender_signature: null,
      channel_id: null,
      encryption_salt: null,
      sender_public_key: null,
      recipient_public_key: null,
    },
  },
);

export const PresignedUploadLink = named(
  "PresignedUploadLink",
  z.object({
    file_id: z.string(),
    file_name: z.string(),
    upload_url: z.string(),
    resumable_url: z.string().describe("The same file as a tus 1.0.0 upload resource (decisions 7.1)"),
    method: z.literal("PUT"),
    headers: z.record(z.string(), z.string()).describe("Headers the upload must carry"),
  }),
  { description: "Where one file of a presigned transfer is uploaded (decisions 3.16, 7.1)" },
);

export const PresignedTransfer = named(
  "PresignedTransfer",
  z.object({
    id: z.string(),
    upload_urls: z.array(PresignedUploadLink),
    confirm_url: z.string(),
    expires_at: timestamp.describe("When the upload links expire"),
  }),
  {
    description: "A presigned transfer: upload each file to its link, then confirm",
    example: {
      id: "tr_3f9a1c",
      upload_urls: [
        {
          file_id: "f_1",
          file_name: "report.pdf",
          upload_url: "http://127.0.0.1:8080/v1/uploads/eyJrIjoi",
          resumable_url: "http://127.0.0.1:8080/v1/uploads/eyJrIjoi",
          method: "PUT",
          headers: { "content-type": "application/pdf" },
        },
      ],
      confirm_url: "http://127.0.0.1:8080/v1/transfers/tr_3f9a1c/confirm",
      expires_at: "2026-01-01T13:00:00.000Z",
    },
  },
);

export const DeletedTransfer = named(
  "DeletedTransfer",
  z.object({ id: z.string(), status: z.literal("deleted") }),
  { description: "A deleted transfer" },
);

export const UploadedFile = named("UploadedFile", z.object({ file_id: z.string(), size: byteCount }), {
  description: "A file stored through its signed upload link",
});

export const sendTransfer = operation({
  operationId: "sendTransfer",
  method: "POST",
  path: "/v1/transfers",
  security: "apiKey",
  tag: "transfers",
  summary: "Send files (multipart/form-data, streamed; one `files` part per file)",
  streamedBody: {
    kind: "multipart",
    fields: TransferForm,
    fileField: "files",
    description: "The transfer's fields, then one `files` part per file (its filename and Content-Type kept)",
  },
  responses: { 201: Transfer },
  errors: [400, 403, 404, 409, 413, 415],
});

export const createPresignedTransfer = operation({
  operationId: "createPresignedTransfer",
  method: "POST",
  path: "/v1/transfers/presigned",
  security: "apiKey",
  tag: "transfers",
  summary: "Create a transfer whose files the client uploads straight to storage",
  body: PresignedTransferRequest,
  responses: { 201: PresignedTransfer },
  errors: [403, 404, 409],
});

export const confirmTransfer = operation({
  operationId: "confirmTransfer",
  method: "POST",
  path: "/v1/transfers/:id/confirm",
  security: "apiKey",
  tag: "transfers",
  summary: "Activate a presigned transfer once every file is uploaded with its declared size",
  params: IdParams,
  responses: { 200: Transfer },
  errors: [403, 404, 409, 410],
});

export const listTransfers = operation({
  operationId: "listTransfers",
  method: "GET",
  path: "/v1/transfers",
  security: "apiKey",
  tag: "transfers",
  summary: "Transfers sent or received by the caller's account, newest first",
  query: z.object({
    direction: z.enum(["sent", "received"]).optional().describe("Only sent or only received transfers"),
    status: TransferStatus.exclude(["deleted"]).optional().describe("Only transfers in this status"),
    limit: z.coerce.number().int().min(1).max(100).default(20).describe("Page size"),
    offset: z.coerce.number().int().min(0).default(0).describe("Transfers to skip"),
  }),
  responses: { 200: TransferPage },
});

/** Whose inbox: the same choice for the listing and its event stream (decisions 3.6). */
const inboxAgent = z
  .string()
  .optional()
  .describe("The agent's slug; default X-Service-Agent, else the whole account");
/** The longest inbox position taken (`cursor`, `after`, Last-Event-ID): none given out is longer. */
export const MAX_INBOX_POSITION = 200;
/** A place in an inbox: a page's `next_cursor` and an event's `id` are the same kind of position. */
const inboxPosition = z.string().max(MAX_INBOX_POSITION).optional();

export const getInbox = operation({
  operationId: "getInbox",
  method: "GET",
  path: "/v1/transfers/inbox",
  security: "apiKey",
  tag: "transfers",
  summary: "Incoming pending and active transfers of an agent, with long-poll (`wait`)",
  requestHeaders: ["X-Service-Agent"],
  query: z.object({
    agent_id: inboxAgent,
    cursor: inboxPosition.describe("`next_cursor` of the previous page"),
    limit: z.coerce.number().int().min(1).max(100).default(20).describe("Page size"),
    wait: z.coerce
      .number()
      .min(0)
      .max(MAX_WAIT_SECONDS)
      .default(0)
      .describe("Seconds to wait for a transfer when there is none"),
  }),
  responses: { 200: InboxPage },
  errors: [404],
});

/** Decisions 8.4: the event a stream of the inbox sends for each transfer that arrives. */
export const TRANSFER_RECEIVED = "transfer.received";

export const streamInbox = operation({
  operationId: "streamInbox",
  method: "GET",
  path: "/v1/transfers/inbox/events",
  security: "apiKey",
  tag: "transfers",
  summary: "The inbox as server-sent events: `transfer.received` for each transfer as it arrives",
  description:
    "Each incoming transfer is one event: `event: transfer.received`, `id:` its position in the inbox, `data:` the inbox item (a Transfer, as `GET /v1/transfers/inbox` lists it), sent within 100 ms of its creation through any instance. A `: keep-alive` comment comes every 15 s. Without a position the stream starts with what the inbox holds; `Last-Event-ID` (as EventSource sends it on reconnecting) or `after` replays what came after that position. An event's `id` and a page's `next_cursor` are the same kind of position, so a client moves between this stream and the long-poll without missing a transfer. An API key holds a limited number of streams open at once on an instance (docs/api.md, rate limits): one more answers 429 `RATE_LIMITED` with `Retry-After` until one of them closes.",
  requestHeaders: ["X-Service-Agent", "Last-Event-ID"],
  query: z.object({
    agent_id: inboxAgent,
    after: inboxPosition.describe("Start after this position (an event's `id` or a page's `next_cursor`)"),
  }),
  responses: {
    200: reply({
      description: "An event stream that lasts until the client or the server closes it",
      raw: { "text/event-stream": "text" },
      headers: ["Cache-Control"],
    }),
  },
  errors: [404, 406],
});

export const getTransfer = operation({
  operationId: "getTransfer",
  method: "GET",
  path: "/v1/transfers/:id",
  security: "apiKey",
  tag: "transfers",
  summary: "Status and metadata of a transfer (never changes the download counter)",
  params: IdParams,
  responses: { 200: Transfer },
  errors: [404],
});

export const downloadTransfer = operation({
  operationId: "downloadTransfer",
  method: "GET",
  path: "/v1/transfers/:id/download",
  security: "apiKey",
  tag: "transfers",
  summary: "Count one download and get signed download URLs (15 minutes, Range supported)",
  description:
    "Uses up one of the transfer's `max_downloads`; the last one deletes the files when `auto_delete`.",
  requestHeaders: ["X-Service-Agent"],
  params: IdParams,
  responses: { 200: TransferDownload },
  errors: [400, 403, 404, 409, 410],
});

export const deleteTransfer = operation({
  operationId: "deleteTransfer",
  method: "DELETE",
  path: "/v1/transfers/:id",
  security: "apiKey",
  tag: "transfers",
  summary: "Delete a transfer: its file data goes, its history stays",
  params: IdParams,
  responses: { 200: DeletedTransfer },
  errors: [403, 404],
});

export const TokenParams = z.object({
  token: z.string().max(4096).describe("The capability the signed link carries"),
});

export const uploadFile = operation({
  operationId: "uploadFile",
  method: "PUT",
  path: "/v1/uploads/:token",
  security: "none",
  tag: "transfers",
  summary: "Upload one file of a presigned transfer (signed link, no Authorization)",
  params: TokenParams,
  streamedBody: { kind: "binary", description: "The file's bytes, at most its declared size" },
  responses: { 200: UploadedFile },
  errors: [403, 410, 413],
});

export const downloadFile = operation({
  operationId: "downloadFile",
  method: "GET",
  path: "/v1/files/:token",
  security: "none",
  tag: "transfers",
  summary: "Download one file (signed link from the download endpoint, honours Range)",
  requestHeaders: ["Range"],
  params: TokenParams,
  responses: {
    200: reply({
      description: "The whole file, as the media type it was sent with",
      raw: { "*/*": "binary" },
      headers: ["Accept-Ranges", "Content-Disposition"],
    }),
    206: reply({
      description: "The bytes the Range asked for",
      raw: { "*/*": "binary" },
      headers: ["Accept-Ranges", "Content-Disposition", "Content-Range"],
    }),
  },
  errors: [403, 410, 416],
});

export const transferOperations = [
  sendTransfer,
  createPresignedTransfer,
  confirmTransfer,
  listTransfers,
  getInbox,
  streamInbox,
  getTransfer,
  downloadTransfer,
  deleteTransfer,
  uploadFile,
  downloadFile,
];

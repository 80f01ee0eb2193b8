import { z } from "zod";
import { MAX_FILES_PER_TRANSFER } from "../../domain/file-names.js";
import { byteCount, count, IdParams, list, named, slugSchema, timestamp } from "./common.js";
import { KeyProof } from "./log.js";
import { operation } from "./operation.js";
import { ExpiresIn, isMediaType, PresignedUploadLink } from "./transfers.js";

/** Decisions 10.1's sizes of a link's texts. */
const TITLE_MAX = 200;
const MESSAGE_MAX = 2000;

export const RequestStatus = named("RequestStatus", z.enum(["active", "used", "expired", "revoked"]), {
  description: "active: takes files; used: its uses are spent; expired; revoked by its owner",
});

export const RequestLinkCreation = named(
  "RequestLinkCreation",
  z.object({
    agent: slugSchema
      .optional()
      .describe("The receiving agent's slug (else X-Service-Agent, else the account's first agent)"),
    title: z.string().min(1).max(TITLE_MAX),
    message: z.string().max(MESSAGE_MAX).optional(),
    max_files: z.number().int().min(1).max(MAX_FILES_PER_TRANSFER).default(10),
    max_total_size: z
      .number()
      .int()
      .min(1)
      .optional()
      .meta({ format: "int64" })
      .describe("Bytes as uploaded (encrypted); default and ceiling: the plan's maximum file size"),
    expires_in: ExpiresIn.optional().describe("Default 7d, within the plan's retention"),
    max_uses: z.number().int().min(1).max(1000).default(1),
    ask_sender_name: z.boolean().default(false),
    ask_sender_email: z.boolean().default(false),
  }),
  {
    description: "A request link to create (decisions 10.1)",
    example: { title: "Your March invoice", message: "PDF please", max_files: 3, expires_in: "7d" },
  },
);

const linkFields = {
  id: z.uuid(),
  agent: z.string().describe("The receiving agent's slug"),
  title: z.string(),
  message: z.string().nullable(),
  max_files: count,
  max_total_size: byteCount,
  expires_at: timestamp,
  max_uses: count,
  uses: count,
  status: RequestStatus,
  created_at: timestamp,
};

export const RequestLink = named("RequestLink", z.object(linkFields), {
  description: "A request link (never its token, shown once at creation)",
});

export const IssuedRequestLink = named(
  "IssuedRequestLink",
  z.object({
    id: linkFields.id,
    token: z.string().describe("`hrq_` + 32 base64url characters: shown this once, never again"),
    url: z.string().describe("{PUBLIC_BASE_URL}/r/{token}: the page a person opens to send"),
    ...(({ id: _, ...rest }) => rest)(linkFields),
  }),
  {
    description: "A new request link, with its token and page",
    example: {
      id: "5a0c7e1e-8f7b-4c1e-9d51-2f0f6f3b9a10",
      token: "hrq_4kz8Qm1vW0pR7tY2nB5xC9dF3gH6jK8L",
      url: "http://127.0.0.1:8080/r/hrq_4kz8Qm1vW0pR7tY2nB5xC9dF3gH6jK8L",
      agent: "invoice-bot",
      title: "Your March invoice",
      message: "PDF please",
      max_files: 3,
      max_total_size: 52428800,
      expires_at: "2026-01-08T12:00:00.000Z",
      max_uses: 1,
      uses: 0,
      status: "active",
      created_at: "2026-01-01T12:00:00.000Z",
    },
  },
);

export const PublicRequest = named(
  "PublicRequest",
  z.object({
    title: z.string(),
    message: z.string().nullable(),
    agent: z.object({
      agent_id: z.string(),
      name: z.string().nullable(),
      public_key: z.string().describe("X25519 (base64): encrypt the content key to it (decisions 5.2)"),
      key_version: z.number().int().min(1),
      key_proof: KeyProof.nullable().describe(
        "The log's proof of this key (decisions 9.6): check it before encrypting a byte",
      ),
    }),
    max_files: count,
    max_total_size: byteCount,
    expires_at: timestamp,
    ask_sender_name: z.boolean(),
    ask_sender_email: z.boolean(),
  }),
  { description: "What a request link shows whoever holds its token: never the account or its other agents" },
);

export const RequestTransferCreation = named(
  "RequestTransferCreation",
  z.object({
    files: z
      .array(
        z.object({
          name: z.string(),
          size: byteCount.describe("Bytes as uploaded: the HOE1 file (decisions 5.3)"),
          content_type: z
            .string()
            .refine(isMediaType, "must be a media type (type/subtype[; parameters]) in printable ASCII")
            .default("application/octet-stream"),
          encryption_iv: z.string().min(1).max(256).describe("base64 of the file's HOE1 salt"),
        }),
      )
      .min(1)
      .max(MAX_FILES_PER_TRANSFER),
    encrypted_key: z
      .string()
      .min(1)
      .max(4096)
      .describe("The content key wrapped to the agent's key (base64)"),
    recipient_key_version: z.number().int().min(1).optional(),
    sender_name: z.string().max(TITLE_MAX).optional(),
    sender_email: z.email().max(320).optional(),
  }),
  { description: "Files sent through a request link, declared before any byte; always encrypted" },
);

export const RequestTransfer = named(
  "RequestTransfer",
  z.object({
    transfer_id: z.string(),
    upload_urls: z.array(PresignedUploadLink),
    confirm_url: z.string().describe("POST it, with no credential, once every file is uploaded"),
  }),
  { description: "A transfer through a request link: upload each file (PUT or tus), then confirm" },
);

export const ConfirmedRequestTransfer = named(
  "ConfirmedRequestTransfer",
  z.object({ transfer_id: z.string(), status: z.string() }),
  { description: "The transfer, active once confirmed" },
);

const TokenParams = z.object({ token: z.string().describe("The link's token (`hrq_…`)") });

export const createRequest = operation({
  operationId: "createRequest",
  method: "POST",
  path: "/v1/requests",
  security: "apiKey",
  tag: "requests",
  summary: "Create a request link: anyone holding it can send the agent files, encrypted to its key",
  requestHeaders: ["X-Service-Agent"],
  body: RequestLinkCreation,
  responses: { 201: IssuedRequestLink },
  errors: [404],
});

export const listRequests = operation({
  operationId: "listRequests",
  method: "GET",
  path: "/v1/requests",
  security: "apiKey",
  tag: "requests",
  summary: "The account's request links, newest first (never their tokens)",
  responses: { 200: list("RequestLinkList", "requests", RequestLink, "Request links") },
});

export const getRequest = operation({
  operationId: "getRequest",
  method: "GET",
  path: "/v1/requests/:id",
  security: "apiKey",
  tag: "requests",
  summary: "One request link (never its token)",
  params: IdParams,
  responses: { 200: RequestLink },
  errors: [404],
});

export const revokeRequest = operation({
  operationId: "revokeRequest",
  method: "DELETE",
  path: "/v1/requests/:id",
  security: "apiKey",
  tag: "requests",
  summary: "Revoke a request link: it answers 410 REQUEST_CLOSED from now on",
  params: IdParams,
  responses: { 200: RequestLink },
  errors: [404],
});

export const getRequestByToken = operation({
  operationId: "getRequestByToken",
  method: "GET",
  path: "/v1/requests/by-token/:token",
  security: "none",
  tag: "requests",
  summary: "What a request link asks for, and the agent key to encrypt to (the token is the credential)",
  params: TokenParams,
  responses: { 200: PublicRequest },
  errors: [404, 410, 429],
});

export const sendToRequest = operation({
  operationId: "sendToRequest",
  method: "POST",
  path: "/v1/requests/by-token/:token/transfers",
  security: "none",
  tag: "requests",
  summary: "Declare encrypted files for a request link; limits are checked before any byte",
  params: TokenParams,
  body: RequestTransferCreation,
  responses: { 201: RequestTransfer },
  errors: [403, 404, 409, 410, 413, 429],
});

export const confirmRequestTransfer = operation({
  operationId: "confirmRequestTransfer",
  method: "POST",
  path: "/v1/requests/by-token/:token/transfers/:transfer_id/confirm",
  security: "none",
  tag: "requests",
  summary: "Activate a transfer sent through a request link once its files are stored; counts one use",
  params: TokenParams.extend({ transfer_id: z.string() }),
  responses: { 200: ConfirmedRequestTransfer },
  errors: [404, 410, 429],
});

export const requestOperations = [
  createRequest,
  listRequests,
  getRequest,
  revokeRequest,
  getRequestByToken,
  sendToRequest,
  confirmRequestTransfer,
];

import { z } from "zod";
import { count, named } from "./common.js";
import { operation, reply } from "./operation.js";

/** Decisions 9: the transparency log's public face. */

const base64Hash = z.string().describe("base64 of a 32-byte SHA-256 hash");
const size = z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

export const LogEntry = named(
  "LogEntry",
  z.object({
    position: z.string(),
    type: z.string(),
    stream: z.string(),
    at: z.string(),
    data: z.record(z.string(), z.unknown()).describe("As stored: personal data sealed (decisions 6.5)"),
  }),
  { description: "A leaf of the log: its bytes are this object's RFC 8785 canonical JSON (decisions 9.1)" },
);

export const LogKey = named(
  "LogKey",
  z.object({
    origin: z.string(),
    public_key: z.string().describe("base64 of the 32-byte Ed25519 public key"),
    vkey: z.string().describe("The signed-note verifier key: <origin>+<key id>+<base64(0x01 ‖ key)>"),
  }),
  { description: "The key the log signs its checkpoints with (decisions 9.2)" },
);

export const LogLeaf = named("LogLeaf", z.object({ leaf_index: count, entry: LogEntry }), {
  description: "An event's place in the log, and the leaf it is",
});

export const InclusionProof = named(
  "InclusionProof",
  z.object({ leaf_index: count, tree_size: count, leaf_hash: base64Hash, proof: z.array(base64Hash) }),
  { description: "RFC 9162 2.1.3: the audit path of a leaf in a signed tree" },
);

export const ConsistencyProof = named(
  "ConsistencyProof",
  z.object({ from: count, to: count, proof: z.array(base64Hash) }),
  { description: "RFC 9162 2.1.4: the signed tree of `to` leaves extends the one of `from`" },
);

export const KeyProof = named(
  "KeyProof",
  z.object({
    leaf_index: count,
    entry: LogEntry,
    tree_size: count,
    checkpoint: z.string().describe("The signed note of the tree the proof is against"),
    inclusion: z.array(base64Hash),
  }),
  {
    description:
      "The leaf that set the agent's current keys, proven in a signed checkpoint (decisions 9.6); " +
      "null until a checkpoint covers it (within about a second of a registration)",
  },
);

const isoTime = z.iso.datetime({ offset: true });

export const getLogCheckpoint = operation({
  operationId: "getLogCheckpoint",
  method: "GET",
  path: "/v1/log/checkpoint",
  security: "none",
  tag: "log",
  summary: "The newest signed checkpoint, or the one of `tree_size` exactly as it was first served",
  query: z.object({ tree_size: size.optional().describe("A checkpoint signed before") }),
  responses: {
    200: reply({
      description: "A C2SP signed note; a kept one (with `tree_size`) may be cached for good",
      raw: { "text/plain": "text" },
      headers: ["Cache-Control"],
    }),
  },
  errors: [404],
});

export const getLogKey = operation({
  operationId: "getLogKey",
  method: "GET",
  path: "/v1/log/key",
  security: "none",
  tag: "log",
  summary: "The log's origin and public key, and its signed-note verifier key",
  responses: { 200: LogKey },
});

export const getLogEntry = operation({
  operationId: "getLogEntry",
  method: "GET",
  path: "/v1/log/entries/:position",
  security: "apiKey",
  tag: "log",
  summary: "The leaf of an event the caller's account may see (decisions 6.3)",
  params: z.object({ position: z.string().max(200).describe("The event's position, as history shows it") }),
  responses: { 200: LogLeaf },
  errors: [404],
});

export const getInclusionProof = operation({
  operationId: "getInclusionProof",
  method: "GET",
  path: "/v1/log/proof/inclusion",
  security: "apiKey",
  tag: "log",
  summary: "The audit path of a leaf in a signed tree: hashes only, no other account's content",
  query: z.object({ leaf_index: size, tree_size: size }),
  responses: { 200: InclusionProof },
});

export const getConsistencyProof = operation({
  operationId: "getConsistencyProof",
  method: "GET",
  path: "/v1/log/proof/consistency",
  security: "apiKey",
  tag: "log",
  summary: "The proof that a signed tree extends an earlier one",
  query: z.object({ from: size, to: size }),
  responses: { 200: ConsistencyProof },
});

export const getAuditExport = operation({
  operationId: "getAuditExport",
  method: "GET",
  path: "/v1/audit/export",
  security: "apiKey",
  tag: "log",
  summary:
    "The account's entries with their proofs against one checkpoint, to verify offline (decisions 9.7)",
  query: z.object({
    from: isoTime.optional().describe("Events at or after this time"),
    to: isoTime.optional().describe("Events at or before this time"),
  }),
  responses: {
    200: reply({
      description:
        'NDJSON: first {"checkpoint": <signed note>}, then {"leaf_index", "entry", "inclusion"} per entry in log order',
      raw: { "application/x-ndjson": "text" },
    }),
  },
});

export const logOperations = [
  getLogKey,
  getLogCheckpoint,
  getLogEntry,
  getInclusionProof,
  getConsistencyProof,
  getAuditExport,
];

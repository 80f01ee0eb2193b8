import { z } from "zod";
import type { OperationSpec, RequestHeader, ResponseHeader, Security } from "./operation.js";
import { honoursIdempotencyKey } from "./operation.js";
import { answersOf, type DocumentedAnswer } from "./standard-answers.js";
import { MAX_INBOX_POSITION } from "./transfers.js";

type Json = Record<string, unknown>;
type Io = "input" | "output";

/** Security schemes by what a route takes; all are Bearer tokens, told apart by their prefix. */
const SECURITY_SCHEMES = {
  apiKey: { type: "http", scheme: "bearer", description: "An account's API key (`hnd_…`)" },
  session: {
    type: "http",
    scheme: "bearer",
    description: "A person's session token (`hss_…`) from POST /v1/auth/login, valid 12 hours",
  },
  connectionToken: {
    type: "http",
    scheme: "bearer",
    description: "An agent's one-time connection token (`hct_…`) from a two-step registration, valid 1 hour",
  },
  adminToken: { type: "http", scheme: "bearer", description: "The operator's ADMIN_TOKEN" },
} as const;

const SECURITY: Record<Security, Json[]> = {
  apiKey: [{ apiKey: [] }, { session: [] }],
  session: [{ session: [] }],
  connectionToken: [{ connectionToken: [] }],
  admin: [{ adminToken: [] }],
  none: [],
};

const integerHeader = (description: string) => ({ description, schema: { type: "integer", minimum: 0 } });
const INT64 = { type: "integer", format: "int64", minimum: 0 };
const text = (schema: Json) => ({ type: "string", ...schema });
/** A header every answer it is documented on carries. */
const alwaysSent = (description: string, schema: Json) => ({ required: true, description, schema });

const RESPONSE_HEADERS: Record<ResponseHeader | "X-Request-Id", Json> = {
  "X-Request-Id": { description: "The request's id, as in the service's logs", schema: { type: "string" } },
  "X-RateLimit-Limit": integerHeader("Requests allowed in the current one-minute window for this credential"),
  "X-RateLimit-Remaining": integerHeader("Requests left in the current window"),
  "X-RateLimit-Reset": integerHeader("When the current window ends, in Unix seconds"),
  "Retry-After": integerHeader(
    "Seconds to wait before retrying (sent with the per-minute rate limit and with SERVICE_UNAVAILABLE)",
  ),
  "Idempotent-Replayed": {
    description: "`true` when this is the stored answer to an earlier request with the same Idempotency-Key",
    schema: { type: "string", enum: ["true"] },
  },
  "Accept-Ranges": { description: "Byte ranges are served", schema: { type: "string", enum: ["bytes"] } },
  "Content-Range": {
    required: true,
    description: "The bytes sent (`bytes 0-99/1234`), or the file's size on a 416 (`bytes */1234`)",
    schema: { type: "string" },
  },
  "Content-Disposition": {
    description: "`attachment` with the file's name",
    schema: { type: "string" },
  },
  "Cache-Control": alwaysSent(
    "`no-store`: the answer changes as bytes arrive, or is a live event stream",
    text({ enum: ["no-store"] }),
  ),
  "Tus-Resumable": alwaysSent("The tus protocol version of this server", text({ enum: ["1.0.0"] })),
  "Tus-Version": alwaysSent("The tus protocol versions this server speaks", text({ enum: ["1.0.0"] })),
  "Tus-Extension": alwaysSent(
    "The tus extensions this server supports",
    text({ example: "expiration,checksum,termination" }),
  ),
  "Tus-Max-Size": alwaysSent("The upload's declared size in bytes: it takes no more", INT64),
  "Tus-Checksum-Algorithm": alwaysSent(
    "The algorithms Upload-Checksum may name",
    text({ example: "sha1,sha256" }),
  ),
  "Upload-Offset": alwaysSent("How many bytes of the upload are stored: the offset to send from", INT64),
  "Upload-Length": alwaysSent("The upload's declared size in bytes", INT64),
  "Upload-Expires": alwaysSent(
    "When the upload link expires, as an HTTP date (RFC 9110)",
    text({ example: "Wed, 25 Nov 2026 10:00:00 GMT" }),
  ),
};

const REQUEST_HEADERS: Record<RequestHeader | "Idempotency-Key", Json> = {
  "Idempotency-Key": {
    name: "Idempotency-Key",
    in: "header",
    required: false,
    description:
      "1 to 255 characters. The same key with the same request within 24 hours answers the first answer again (with Idempotent-Replayed: true); with another request, 409 IDEMPOTENCY_CONFLICT",
    schema: { type: "string", minLength: 1, maxLength: 255 },
  },
  "X-Service-Agent": {
    name: "X-Service-Agent",
    in: "header",
    required: false,
    description: "The slug of the connected agent of the account this request acts as",
    schema: { type: "string" },
  },
  Range: {
    name: "Range",
    in: "header",
    required: false,
    description: "One byte range: `bytes=a-b`, `bytes=a-` or `bytes=-n`",
    schema: { type: "string", example: "bytes=0-1023" },
  },
  "Tus-Resumable": {
    name: "Tus-Resumable",
    in: "header",
    required: true,
    description: "The tus protocol version the client speaks: it must be 1.0.0",
    schema: { type: "string", enum: ["1.0.0"] },
  },
  "Upload-Offset": {
    name: "Upload-Offset",
    in: "header",
    required: true,
    description: "The offset the body's bytes go at: the upload's current offset (HEAD tells it)",
    schema: INT64,
  },
  "Upload-Checksum": {
    name: "Upload-Checksum",
    in: "header",
    required: false,
    description:
      "The checksum of this request's body: `sha1` or `sha256`, a space, the base64 digest. A mismatch keeps nothing of the request (460)",
    schema: { type: "string", example: "sha256 47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=" },
  },
  "Last-Event-ID": {
    name: "Last-Event-ID",
    in: "header",
    required: false,
    description:
      "The `id` of the last event received: the stream replays what came after it (wins over `after`)",
    schema: { type: "string", maxLength: MAX_INBOX_POSITION },
  },
};

const TAGS: Record<string, string> = {
  health: "Liveness and readiness",
  agents: "Agents: registration, keys, profile",
  webhooks: "Signed push delivery to an agent's endpoint (decisions 8.1–8.3)",
  accounts: "The caller's account",
  people: "People: sign-up, sessions, receiving key",
  "api keys": "An account's API keys",
  connections: "Connections between accounts",
  directory: "Agents a caller can send to",
  broadcasts: "Announcements from the operator",
  transfers: "Sending and receiving files",
  requests: "Request links: anyone holding one sends an agent files, encrypted to its key (decisions 10)",
  uploads: "Resumable uploads (tus 1.0.0) on a presigned file's `resumable_url`: the token is the capability",
  history: "History, audit feed and compliance report",
  log: "The transparency log: checkpoints, proofs, the verifiable audit export (decisions 9)",
  admin: "Operator endpoints (ADMIN_TOKEN)",
};

/**
 * Collects named schemas into `components.schemas` and answers references to them. Convert every
 * response (`output`) before any request (`input`): a named schema that reads differently as a
 * request (defaults make fields optional, no `additionalProperties: false`) gets its own
 * `<name>Input` component.
 */
class Components {
  readonly schemas: Record<string, Json> = {};

  /** The JSON Schema of `schema` as a request (`input`) or a response (`output`) sees it. */
  schemaOf(schema: z.ZodType, io: Io): Json {
    const converted = z.toJSONSchema(schema, { target: "draft-2020-12", io, unrepresentable: "any" }) as Json;
    const { $schema: _, $defs = {}, ...root } = converted;
    const definitions = Object.entries($defs as Record<string, Json>);
    const names = new Map<string, string>();
    const asNamed = new Map<string, string>();
    for (const [id, definition] of definitions) {
      const existing = this.schemas[id];
      const same = JSON.stringify(referencing(definition, asNamed)) === JSON.stringify(existing);
      const differs = existing !== undefined && !same;
      if (differs && io === "output") throw new Error(`two response schemas are named ${id}`);
      names.set(id, differs ? `${id}Input` : id);
    }
    for (const [id, definition] of definitions) {
      this.schemas[names.get(id) ?? id] = referencing(definition, names) as Json;
    }
    return referencing(root, names) as Json;
  }
}

/** zod writes references into `$defs`; the document keeps them in `components.schemas`. */
function referencing(value: unknown, names: Map<string, string>): unknown {
  if (Array.isArray(value)) return value.map((item) => referencing(item, names));
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, inner]) => {
      if (key !== "$ref" || typeof inner !== "string" || !inner.startsWith("#/$defs/")) {
        return [key, referencing(inner, names)];
      }
      const id = inner.slice("#/$defs/".length);
      return [key, `#/components/schemas/${names.get(id) ?? id}`];
    }),
  );
}

/** `/v1/transfers/:id` → `/v1/transfers/{id}`. */
export const openApiPath = (path: string): string => path.replace(/:(\w+)/g, "{$1}");

function parametersOf(spec: OperationSpec, components: Components): Json[] {
  const parameters: Json[] = [];
  const add = (place: "path" | "query", shape: Record<string, z.ZodType>) => {
    for (const [name, field] of Object.entries(shape)) {
      const { description, ...schema } = components.schemaOf(field, "input");
      parameters.push({
        name,
        in: place,
        required: place === "path" || !field.safeParse(undefined).success,
        ...(typeof description === "string" ? { description } : {}),
        schema,
      });
    }
  };
  if (spec.params) add("path", spec.params.shape);
  if (spec.query) add("query", spec.query.shape);
  const headers: string[] = [...(spec.requestHeaders ?? [])];
  if (honoursIdempotencyKey(spec)) headers.unshift("Idempotency-Key");
  for (const header of headers) parameters.push({ $ref: `#/components/parameters/${header}` });
  return parameters;
}

const BINARY = { type: "string", format: "binary" };

function requestBodyOf(spec: OperationSpec, components: Components): Json | undefined {
  if (spec.body) {
    return {
      required: !spec.body.safeParse(undefined).success,
      content: { "application/json": { schema: components.schemaOf(spec.body, "input") } },
    };
  }
  const streamed = spec.streamedBody;
  if (!streamed) return undefined;
  if (streamed.kind === "binary") {
    return {
      required: true,
      description: streamed.description,
      content: { [streamed.mediaType ?? "application/octet-stream"]: { schema: BINARY } },
    };
  }
  // The form's fields are a named schema (a reference): the file parts join it with allOf, which
  // generated clients type as both, where keywords beside a reference would be dropped.
  const files = {
    type: "object",
    properties: {
      [streamed.fileField]: { type: "array", items: BINARY, description: "One part per file" },
    },
    required: [streamed.fileField],
  };
  return {
    required: true,
    description: streamed.description,
    content: {
      "multipart/form-data": {
        schema: { allOf: [components.schemaOf(streamed.fields, "input"), files] },
        encoding: { [streamed.fileField]: { contentType: "application/octet-stream" } },
      },
    },
  };
}

function responseOf(answer: DocumentedAnswer, components: Components): Json {
  const content: Json = {};
  if (answer.json) content["application/json"] = { schema: components.schemaOf(answer.json, "output") };
  for (const [mediaType, kind] of Object.entries(answer.raw ?? {})) {
    content[mediaType] = { schema: kind === "binary" ? BINARY : { type: "string" } };
  }
  const headers = ["X-Request-Id", ...answer.headers];
  return {
    description: answer.description,
    headers: Object.fromEntries(headers.map((name) => [name, { $ref: `#/components/headers/${name}` }])),
    ...(Object.keys(content).length > 0 ? { content } : {}),
  };
}

/** What the HTTP layer refuses before any operation runs; any operation can meet it. */
export const PROTOCOL_REFUSALS = "4XX";
const PROTOCOL_REFUSAL = {
  description:
    "Refused by the HTTP layer before the operation ran, in the one error body: a malformed request (400 BAD_REQUEST), a stalled one (408 REQUEST_TIMEOUT), a body, URI or headers too large (413 PAYLOAD_TOO_LARGE, 414 URI_TOO_LONG, 431 HEADERS_TOO_LARGE), an Expect it cannot meet (417)",
  content: { "application/json": { schema: { $ref: "#/components/schemas/ErrorBody" } } },
  // A refusal of a counted request still carries the counter.
  headers: Object.fromEntries(
    (["X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"] as const).map((name) => [
      name,
      { $ref: `#/components/headers/${name}` },
    ]),
  ),
};

function responsesOf(spec: OperationSpec, components: Components): Json {
  return {
    ...Object.fromEntries(
      [...answersOf(spec)].map(([status, answer]) => [String(status), responseOf(answer, components)]),
    ),
    [PROTOCOL_REFUSALS]: { $ref: "#/components/responses/ProtocolRefusal" },
  };
}

function operationOf(spec: OperationSpec, responses: Json, components: Components): Json {
  const parameters = parametersOf(spec, components);
  const requestBody = requestBodyOf(spec, components);
  return {
    operationId: spec.operationId,
    tags: [spec.tag],
    summary: spec.summary,
    ...(spec.description ? { description: spec.description } : {}),
    security: SECURITY[spec.security],
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(requestBody ? { requestBody } : {}),
    responses,
  };
}

/** The OpenAPI 3.1 document of `operations`, served at /docs/json and written to docs/openapi.json. */
export function openApiDocument(operations: readonly OperationSpec[], serverUrl: string): Json {
  const components = new Components();
  const ids = new Set(operations.map((spec) => spec.operationId));
  if (ids.size < operations.length) throw new Error("an operationId is used twice");
  // Responses first: see Components.
  const responses = operations.map((spec) => responsesOf(spec, components));
  const paths: Record<string, Json> = {};
  operations.forEach((spec, index) => {
    const path = openApiPath(spec.path);
    const declared = operationOf(spec, responses[index] as Json, components);
    paths[path] = { ...paths[path], [spec.method.toLowerCase()]: declared };
  });
  const usedTags = new Set(operations.map((spec) => spec.tag));
  return {
    openapi: "3.1.0",
    info: {
      title: "Handoff API",
      description:
        "End-to-end encrypted file transfer for AI agents and people. Every failure answers the one error body (`ErrorBody`).",
      version: "1",
      license: { name: "Proprietary", identifier: "LicenseRef-Proprietary" },
    },
    servers: [{ url: serverUrl }],
    tags: Object.entries(TAGS)
      .filter(([name]) => usedTags.has(name))
      .map(([name, description]) => ({ name, description })),
    paths,
    components: {
      schemas: Object.fromEntries(Object.entries(components.schemas).sort(([a], [b]) => a.localeCompare(b))),
      responses: { ProtocolRefusal: PROTOCOL_REFUSAL },
      parameters: REQUEST_HEADERS,
      headers: RESPONSE_HEADERS,
      securitySchemes: SECURITY_SCHEMES,
    },
  };
}

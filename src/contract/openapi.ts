import { z } from "zod";
import type { OperationSpec, RequestHeader, ResponseHeader, Security } from "./operation.js";
import { honoursIdempotencyKey } from "./operation.js";
import { answersOf, type DocumentedAnswer } from "./standard-answers.js";

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

const RESPONSE_HEADERS: Record<ResponseHeader | "X-Request-Id", Json> = {
  "X-Request-Id": { description: "The request's id, as in the service's logs", schema: { type: "string" } },
  "X-RateLimit-Limit": integerHeader("Requests allowed in the current one-minute window for this credential"),
  "X-RateLimit-Remaining": integerHeader("Requests left in the current window"),
  "X-RateLimit-Reset": integerHeader("When the current window ends, in Unix seconds"),
  "Retry-After": integerHeader("Seconds to wait before retrying"),
  "Idempotent-Replayed": {
    description: "`true` when this is the stored answer to an earlier request with the same Idempotency-Key",
    schema: { type: "string", enum: ["true"] },
  },
  "Accept-Ranges": { description: "Byte ranges are served", schema: { type: "string", enum: ["bytes"] } },
  "Content-Range": {
    description: "The bytes sent (`bytes 0-99/1234`), or the file's size on a 416 (`bytes */1234`)",
    schema: { type: "string" },
  },
  "Content-Disposition": {
    description: "`attachment` with the file's name",
    schema: { type: "string" },
  },
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
};

const TAGS: Record<string, string> = {
  health: "Liveness and readiness",
  agents: "Agents: registration, keys, profile",
  accounts: "The caller's account",
  people: "People: sign-up, sessions, receiving key",
  "api keys": "An account's API keys",
  connections: "Connections between accounts",
  directory: "Agents a caller can send to",
  broadcasts: "Announcements from the operator",
  transfers: "Sending and receiving files",
  history: "History, audit feed and compliance report",
  admin: "Operator endpoints (ADMIN_TOKEN)",
};

/** Collects named schemas into `components.schemas` and answers references to them. */
class Components {
  readonly schemas: Record<string, Json> = {};

  /** The JSON Schema of `schema` as a request (`input`) or a response (`output`) sees it. */
  schemaOf(schema: z.ZodType, io: Io): Json {
    const converted = z.toJSONSchema(schema, { target: "draft-2020-12", io, unrepresentable: "any" }) as Json;
    const { $schema: _, $defs, ...root } = converted;
    for (const [id, definition] of Object.entries(($defs ?? {}) as Record<string, Json>)) {
      this.add(id, referencing(definition) as Json);
    }
    return referencing(root) as Json;
  }

  private add(id: string, definition: Json): void {
    const existing = this.schemas[id];
    if (existing && JSON.stringify(existing) !== JSON.stringify(definition)) {
      throw new Error(
        `schema ${id} differs as a request and as a response (defaults, transforms): name the two apart`,
      );
    }
    this.schemas[id] = definition;
  }
}

/** zod writes references into `$defs`; the document keeps them in `components.schemas`. */
function referencing(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(referencing);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, inner]) =>
      key === "$ref" && typeof inner === "string"
        ? [key, inner.replace("#/$defs/", "#/components/schemas/")]
        : [key, referencing(inner)],
    ),
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
      content: { "application/octet-stream": { schema: BINARY } },
    };
  }
  const form = components.schemaOf(streamed.fields, "input");
  const properties = form.properties as Json;
  return {
    required: true,
    description: streamed.description,
    content: {
      "multipart/form-data": {
        schema: {
          ...form,
          properties: {
            ...properties,
            [streamed.fileField]: { type: "array", items: BINARY, description: "One part per file" },
          },
          required: [...((form.required as string[]) ?? []), streamed.fileField],
        },
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

function operationOf(spec: OperationSpec, components: Components): Json {
  const parameters = parametersOf(spec, components);
  const requestBody = requestBodyOf(spec, components);
  const responses = Object.fromEntries(
    [...answersOf(spec)].map(([status, answer]) => [String(status), responseOf(answer, components)]),
  );
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
  const paths: Record<string, Json> = {};
  const seen = new Set<string>();
  for (const spec of operations) {
    if (seen.has(spec.operationId)) throw new Error(`operationId ${spec.operationId} is used twice`);
    seen.add(spec.operationId);
    const path = openApiPath(spec.path);
    paths[path] = { ...paths[path], [spec.method.toLowerCase()]: operationOf(spec, components) };
  }
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
      parameters: REQUEST_HEADERS,
      headers: RESPONSE_HEADERS,
      securitySchemes: SECURITY_SCHEMES,
    },
  };
}

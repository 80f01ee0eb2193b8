import { readFileSync } from "node:fs";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { openApiPath, PROTOCOL_REFUSALS } from "../../src/contract/openapi.js";

/**
 * Every answer the service gives in the HTTP tests, checked against docs/openapi.json: its status is
 * documented for the operation, its content type for that status, the headers the document knows
 * (rate limits, Retry-After, ranges…) documented where they are sent and present where required,
 * and a JSON body valid against the documented schema. What differs is recorded here; the
 * vitest setup (./openapi-check-setup.ts) fails the test during which it happened.
 */

type Json = Record<string, unknown>;
interface Operation {
  responses: Record<string, Json>;
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
  components: { headers: Record<string, Json>; responses: Record<string, Json> };
}

const DOCUMENT_ID = "https://handoff.invalid/openapi.json";
const document = JSON.parse(
  readFileSync(new URL("../../docs/openapi.json", import.meta.url), "utf8"),
) as Document;
/** The headers the document names anywhere: one of these sent on an answer must be documented on it. */
const KNOWN_HEADERS = new Set(Object.keys(document.components.headers).map((name) => name.toLowerCase()));
/** The codes of the HTTP layer's own refusals (src/http/errors.ts), which `4XX` documents. */
const PROTOCOL_CODES = new Set([
  "BAD_REQUEST",
  "REQUEST_TIMEOUT",
  "PAYLOAD_TOO_LARGE",
  "URI_TOO_LONG",
  "EXPECTATION_FAILED",
  "HEADERS_TOO_LARGE",
]);

const PROTOCOL_STATUSES = new Set([400, 408, 413, 414, 417, 431]);

const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats.default(ajv);
ajv.addFormat("int64", { type: "number", validate: (value: number) => Number.isSafeInteger(value) });
ajv.addFormat("binary", true);
ajv.addSchema(document as unknown as Json, DOCUMENT_ID);
const validators = new Map<string, ValidateFunction>();

const pointer = (...segments: string[]) =>
  segments.map((segment) => segment.replaceAll("~", "~0").replaceAll("/", "~1")).join("/");

function validatorAt(path: string[]): ValidateFunction {
  const ref = `${DOCUMENT_ID}#/${pointer(...path)}`;
  let validate = validators.get(ref);
  if (!validate) {
    validate = ajv.compile({ $ref: ref });
    validators.set(ref, validate);
  }
  return validate;
}

const resolved = (response: Json): Json => {
  const ref = response.$ref;
  if (typeof ref !== "string") return response;
  return document.components.responses[ref.split("/").pop() ?? ""] ?? {};
};

export const violations: string[] = [];
export let answersChecked = 0;

interface Answer {
  status: number;
  headers: Record<string, unknown>;
  body: string | null;
}

/** What is wrong with an answer to `method url` (a route as fastify names it), or nothing. */
export function problemsOf(method: string, route: string, answer: Answer): string[] {
  const path = openApiPath(route);
  const declared = document.paths[path] ?? {};
  // Fastify answers HEAD for every GET route: a HEAD the contract does not declare is that GET's.
  const verb = method === "HEAD" && !declared.head ? "get" : method.toLowerCase();
  const operation = declared[verb];
  if (!operation) return [`${method} ${route} is served but not in the document`];
  const { status } = answer;
  let key = String(status);
  let documented = operation.responses[key];
  if (!documented && PROTOCOL_STATUSES.has(status)) {
    // The HTTP layer's own answers may leave past the reply (written to the socket): no body seen.
    const code = answer.body ? (JSON.parse(answer.body) as { error?: { code?: string } }).error?.code : null;
    if (code === null || (code !== undefined && PROTOCOL_CODES.has(code))) {
      key = PROTOCOL_REFUSALS;
      documented = operation.responses[key];
    }
  }
  if (!documented) return [`status ${status} is not documented`];
  const response = resolved(documented);
  const problems: string[] = [];

  const headers = (response.headers ?? {}) as Record<string, { $ref?: string }>;
  const documentedHeaders = new Set(Object.keys(headers).map((name) => name.toLowerCase()));
  for (const name of Object.keys(answer.headers)) {
    if (KNOWN_HEADERS.has(name) && !documentedHeaders.has(name))
      problems.push(`header ${name} is not documented`);
  }
  for (const [name, header] of Object.entries(headers)) {
    const definition = document.components.headers[header.$ref?.split("/").pop() ?? name];
    if (definition?.required && answer.headers[name.toLowerCase()] === undefined) {
      problems.push(`required header ${name} is missing`);
    }
  }

  const content = (response.content ?? {}) as Record<string, unknown>;
  const contentType = String(answer.headers["content-type"] ?? "")
    .split(";")[0]
    ?.trim();
  if (method === "HEAD" || !answer.body) return problems;
  const [type = ""] = contentType?.split("/") ?? [];
  const mediaType = [contentType ?? "", `${type}/*`, "*/*"].find((candidate) => candidate in content);
  if (!mediaType) return [...problems, `content type ${contentType || "(none)"} is not documented`];
  if (mediaType === "application/json") {
    const validate = validatorAt(["paths", path, verb, "responses", key, "content", mediaType, "schema"]);
    if (key === PROTOCOL_REFUSALS) return problems;
    if (!validate(JSON.parse(answer.body))) {
      problems.push(`body does not match: ${ajv.errorsText(validate.errors)}`);
    }
  }
  return problems;
}

const HIDDEN = /^\/(docs|metrics)(\/|$)/;
const payloads = new WeakMap<FastifyRequest, string | null>();

/** Checks every answer of `app`; call before any route is added. */
export function checkAnswersAgainstDocument(app: FastifyInstance): void {
  app.addHook("onSend", async (request: FastifyRequest, _reply: FastifyReply, payload: unknown) => {
    payloads.set(request, typeof payload === "string" ? payload : Buffer.isBuffer(payload) ? null : null);
    return payload;
  });
  app.addHook("onResponse", async (request, reply) => {
    const route = request.routeOptions.url;
    // The 404 of no route, the documentation and metrics, the web app's pages: not operations.
    if (!route || HIDDEN.test(route) || request.routeOptions.schema?.hide) return;
    if (!route.startsWith("/v1/") && route !== "/healthz" && route !== "/readyz") return;
    answersChecked++;
    const problems = problemsOf(request.method, route, {
      status: reply.statusCode,
      headers: reply.getHeaders(),
      body: payloads.get(request) ?? null,
    });
    for (const problem of problems)
      violations.push(`${request.method} ${route} → ${reply.statusCode}: ${problem}`);
  });
}

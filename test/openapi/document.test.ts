import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { promisify } from "node:util";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  DOCUMENTED_SERVER,
  OPENAPI_FILE,
  openApiText,
  SDK_TYPES_FILE,
  sdkTypesText,
} from "../../scripts/contract-documents.js";
import { registerPending } from "../http/helpers.js";
import { newPerson } from "../http/people.js";
import { ADMIN_TOKEN, startTestApp, type TestApp } from "../support/app.js";
import { postgresServer } from "../support/databases.js";
import { unopenedStream } from "../support/event-stream-reader.js";

/**
 * docs/openapi.json as a client developer meets it (issue 19): the document the server serves, the
 * committed one and the contract agree; Redocly's recommended rules find nothing; every
 * operation, called without credentials, asks for them exactly when the document says so; and
 * called with them, answers only what the document describes (the answer check of every test).
 */

type Json = Record<string, unknown>;
interface Operation {
  operationId?: string;
  security?: Record<string, string[]>[];
  requestBody?: { content: Record<string, unknown> };
  responses?: Record<string, { content?: object }>;
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
  components: { securitySchemes: Json; schemas: Record<string, { examples?: unknown[] }> };
}

const committed = () => readFileSync(OPENAPI_FILE, "utf8");
const document = JSON.parse(committed()) as Document;
const operations = Object.entries(document.paths).flatMap(([path, methods]) =>
  Object.entries(methods).map(([method, operation]) => ({ path, method: method.toUpperCase(), operation })),
);

describe("the OpenAPI document", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({
      database: postgresServer ? "postgres" : "pglite",
      env: { PUBLIC_BASE_URL: DOCUMENTED_SERVER },
    });
  });
  afterAll(() => t?.close());

  it("served at /docs/json is docs/openapi.json", async () => {
    const served = await t.call("GET", "/docs/json");
    expect(served.statusCode).toBe(200);
    expect(served.json()).toEqual(document);
  });

  it("docs/openapi.json and the SDK's api-types.ts are what `npm run contract` writes from the contract", async () => {
    expect(committed(), "docs/openapi.json is stale: run npm run contract").toBe(openApiText());
    expect(readFileSync(SDK_TYPES_FILE, "utf8"), `${SDK_TYPES_FILE} is stale: run npm run contract`).toBe(
      await sdkTypesText(),
    );
  });

  it("passes Redocly's recommended rules with no error and no warning", async () => {
    const { stdout } = await promisify(execFile)(
      "node_modules/.bin/redocly",
      ["lint", OPENAPI_FILE, "--extends=recommended", "--format=json"],
      { env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" } },
    );
    const report = JSON.parse(stdout) as {
      totals: { errors: number; warnings: number };
      problems: unknown[];
    };
    expect(report.problems).toEqual([]);
    expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
  });

  it("gives examples that its own schemas accept", () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats.default(ajv);
    ajv.addFormat("int64", { type: "number", validate: (value: number) => Number.isSafeInteger(value) });
    ajv.addSchema(document, "openapi.json");
    const wrong: string[] = [];
    const withExamples = Object.entries(document.components.schemas).filter(([, schema]) => schema.examples);
    for (const [name, schema] of withExamples) {
      const validate = ajv.compile({ $ref: `openapi.json#/components/schemas/${name}` });
      for (const example of schema.examples ?? [])
        if (!validate(example)) wrong.push(`${name}: ${ajv.errorsText(validate.errors)}`);
    }
    expect(withExamples.length).toBeGreaterThan(10);
    expect(wrong).toEqual([]);
  });

  it("names every operation with a unique camelCase operationId and only declared security schemes", () => {
    expect(operations.length).toBeGreaterThan(50);
    const ids = operations.map(({ operation }) => operation.operationId);
    for (const [index, id] of ids.entries()) {
      const { method, path } = operations[index] as (typeof operations)[number];
      expect(id, `${method} ${path}`).toMatch(/^[a-z][A-Za-z0-9]*$/);
    }
    expect(new Set(ids).size).toBe(ids.length);
    const schemes = new Set(Object.keys(document.components.securitySchemes));
    for (const { method, path, operation } of operations) {
      expect(operation.security, `${method} ${path}`).toBeDefined();
      for (const requirement of operation.security ?? []) {
        for (const scheme of Object.keys(requirement)) expect(schemes, `${method} ${path}`).toContain(scheme);
      }
    }
  });

  /** Calls an operation with placeholder input: "walk" for each path parameter, `{}` as a JSON body. */
  function walk({ path, method, operation }: (typeof operations)[number], authorization?: string) {
    const json = operation.requestBody?.content["application/json"] !== undefined;
    return t.app.inject({
      method: method as "GET",
      url: path.replace(/\{\w+\}/g, "walk"),
      headers: {
        "tus-resumable": "1.0.0",
        ...(authorization ? { authorization } : {}),
        ...(json ? { "content-type": "application/json" } : {}),
        ...unopenedStream(operation),
      },
      ...(json ? { payload: "{}" } : {}),
    });
  }

  it("declares no security on exactly the operations that answer without credentials", async () => {
    const wrong: string[] = [];
    for (const entry of operations) {
      const { path, method, operation } = entry;
      const answer = await walk(entry);
      const isPublic = operation.security?.length === 0;
      if ((answer.statusCode === 401) === isPublic)
        wrong.push(`${method} ${path}: ${isPublic ? "public" : "secured"} but answered ${answer.statusCode}`);
    }
    expect(wrong).toEqual([]);
  });

  it("answers every operation called with its credential and placeholder input as the document says", async () => {
    const { apiKey } = await t.newAccount();
    const { session } = await newPerson(t);
    const { connection_token } = await registerPending(t, apiKey, "walking-agent");
    const credentials: Record<string, string> = {
      apiKey,
      session,
      connectionToken: connection_token,
      adminToken: ADMIN_TOKEN,
    };
    // Logging out ends the session the other operations use: last.
    const ordered = [...operations].sort(
      (a, b) => Number(a.operation.operationId === "logOut") - Number(b.operation.operationId === "logOut"),
    );
    const wrong: string[] = [];
    for (const entry of ordered) {
      const scheme = Object.keys(entry.operation.security?.[0] ?? {})[0];
      const answer = await walk(entry, scheme ? `Bearer ${credentials[scheme]}` : undefined);
      if (answer.statusCode === 401 || answer.statusCode >= 500)
        wrong.push(`${entry.method} ${entry.path}: ${answer.statusCode} ${answer.body}`);
    }
    // Every answer was also checked against the document (test/support/openapi-check-setup.ts).
    expect(wrong).toEqual([]);
  });
});

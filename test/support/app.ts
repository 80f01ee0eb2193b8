import { randomBytes } from "node:crypto";
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { loadConfig } from "../../src/config.js";
import { embeddedDirectory } from "../../src/db/database.js";
import { type AppOptions, buildApp } from "../../src/http/app.js";
import { openService, type Service, type ServiceOptions } from "../../src/service.js";
import { freshPostgres, postgresServer, seedEmbeddedDatabase, tempDir } from "./databases.js";
import { checkAnswersAgainstDocument } from "./openapi-check.js";

export const ADMIN_TOKEN = "test-admin-token-0123456789";

export interface TestApp {
  app: FastifyInstance;
  service: Service;
  /** Sends a request; `key` becomes the Bearer credential, `body` JSON. */
  call(method: string, url: string, options?: CallOptions): Promise<LightMyRequestResponse>;
  /** Creates an account through the admin endpoint; returns its id and first API key. */
  newAccount(plan?: string): Promise<{ accountId: string; apiKey: string; keyId: string; email: string }>;
  close(): Promise<void>;
}

export interface CallOptions {
  key?: string;
  body?: unknown;
  headers?: Record<string, string>;
}

export const randomPublicKey = () => randomBytes(32).toString("base64");

/** The real service and HTTP app on PGlite (a temp DATA_DIR) or on a fresh PostgreSQL database. */
export async function startTestApp(
  options: {
    database?: "pglite" | "postgres";
    env?: Record<string, string>;
    app?: AppOptions;
    service?: ServiceOptions;
  } = {},
): Promise<TestApp> {
  const dir = tempDir();
  const fresh =
    options.database === "postgres" && postgresServer ? await freshPostgres(postgresServer) : null;
  if (!fresh && !options.env?.DATABASE_URL) seedEmbeddedDatabase(embeddedDirectory(dir.path));
  const config = loadConfig({
    DATA_DIR: dir.path,
    ADMIN_TOKEN,
    TEST_CLOCK: "1",
    ...(fresh ? { DATABASE_URL: fresh.url } : {}),
    ...options.env,
  });
  const service = await openService(config, options.service);
  const app = await buildApp(service, { instrument: checkAnswersAgainstDocument, ...options.app });

  const call: TestApp["call"] = (method, url, { key, body, headers } = {}) =>
    app.inject({
      method: method as "GET",
      url,
      headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers },
      ...(body !== undefined ? { payload: body as object } : {}),
    });

  let accounts = 0;
  const newAccount: TestApp["newAccount"] = async (plan = "free") => {
    const email = `user${++accounts}-${randomBytes(3).toString("hex")}@example.com`;
    const response = await call("POST", "/v1/admin/accounts", { key: ADMIN_TOKEN, body: { email, plan } });
    if (response.statusCode !== 201) throw new Error(`account creation failed: ${response.body}`);
    const created = response.json();
    return {
      accountId: created.account.id,
      apiKey: created.api_key.api_key,
      keyId: created.api_key.id,
      email,
    };
  };

  return {
    app,
    service,
    call,
    newAccount,
    async close() {
      await app.close();
      await service.close();
      await fresh?.drop();
      dir.remove();
    },
  };
}

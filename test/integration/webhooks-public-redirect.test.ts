import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, randomPublicKey } from "../support/app.js";
import { freshPostgres, postgresServer, tempDir } from "../support/databases.js";
import { type PublicLookingAddress, publicLookingAddress } from "../support/public-address.js";
import { json, ServerProcess } from "../support/server-process.js";
import { type Receiver, startReceiver } from "../support/webhook-receiver.js";

/** Start-up (tsx and the database) takes minutes when the suite runs on a busy 2-core machine. */
const START_TIMEOUT_MS = 180_000;

const place = publicLookingAddress();
const skipReason = typeof place === "string" ? place : "";

/**
 * Issue 23: a webhook whose endpoint answers with a redirect to a private address, on a service
 * run as an operator runs it, WITHOUT WEBHOOKS_ALLOW_PRIVATE: the endpoint is https:// on an
 * address of this machine that looks public (11.x.y.z on a veth of the test's own, its
 * certificate trusted through NODE_EXTRA_CA_CERTS), so the service's own checks and its own
 * delivery code decide, with nothing standing in for them.
 */
describe.skipIf(typeof place === "string")(
  `webhooks on a public-looking https endpoint, WEBHOOKS_ALLOW_PRIVATE unset${skipReason ? ` (skipped: ${skipReason})` : ""}`,
  () => {
    const { address, tls, remove } = place as PublicLookingAddress;
    const dir = tempDir();
    let database: { url: string; drop(): Promise<void> } | undefined;
    let server: ServerProcess;
    let endpoint: Receiver;
    let privateTarget: Receiver;
    let apiKey: string;

    const call = (method: string, path: string, token: string, body?: unknown) =>
      json(server, method, path, token, body);

    beforeAll(async () => {
      privateTarget = await startReceiver("/private");
      endpoint = await startReceiver("/hook", { host: address, tls });
      endpoint.answer = () => ({ status: 302, headers: { location: `${privateTarget.url}?stolen=1` } });
      database = postgresServer ? await freshPostgres(postgresServer) : undefined;
      server = await ServerProcess.start(
        {
          ADMIN_TOKEN,
          DATA_DIR: dir.path,
          ...(database ? { DATABASE_URL: database.url } : {}),
          WEBHOOKS_ALLOW_PRIVATE: "0",
          NODE_EXTRA_CA_CERTS: tls.certFile,
        },
        { readyTimeoutMs: START_TIMEOUT_MS },
      );
      const created = await call("POST", "/v1/admin/accounts", ADMIN_TOKEN, {
        email: `public-hook-${Date.now()}@example.com`,
        plan: "team",
      });
      apiKey = (created.body.api_key as { api_key: string }).api_key;
    }, START_TIMEOUT_MS + 30_000);
    afterAll(async () => {
      await server?.kill();
      await endpoint?.close();
      await privateTarget?.close();
      await database?.drop();
      dir.remove();
      remove();
    });

    it("refuses the private receiver itself: the flag is really unset in that process", async () => {
      const refused = await call("POST", "/v1/agents/register", apiKey, {
        agent_id: "direct",
        public_key: randomPublicKey(),
        webhook_url: privateTarget.url.replace("http://", "https://"),
      });
      expect(refused.status, JSON.stringify(refused.body)).toBe(400);
      expect(refused.body.error).toMatchObject({ code: "VALIDATION_ERROR" });
    });

    it("delivers to the public endpoint, records its redirect to 127.0.0.1 as a failed attempt, and never follows it", async () => {
      const registered = await call("POST", "/v1/agents/register", apiKey, {
        agent_id: "hooked",
        public_key: randomPublicKey(),
        webhook_url: endpoint.url,
      });
      expect(registered.status, JSON.stringify(registered.body)).toBe(201);
      const agentId = registered.body.id as string;
      const test = await call("POST", `/v1/agents/${agentId}/webhook-test`, apiKey);
      expect(test.status, JSON.stringify(test.body)).toBe(202);

      type Attempt = { status_code: number | null; error: string | null };
      let attempt: Attempt | undefined;
      const deadline = Date.now() + 30_000;
      while (!attempt && Date.now() < deadline) {
        const log = await call("GET", `/v1/agents/${agentId}/webhook-deliveries`, apiKey);
        attempt = (log.body.deliveries as { attempts: Attempt[] }[])[0]?.attempts[0];
        if (!attempt) await new Promise((resolve) => setTimeout(resolve, 200));
      }
      expect(attempt, "an attempt was recorded within 30 s").toBeDefined();
      expect(endpoint.received, "the https endpoint was reached").toHaveLength(1);
      expect(attempt?.status_code).toBe(302);
      expect(attempt?.error).toMatch(
        /^redirect to http:\/\/127\.0\.0\.1:\d+\/private\?stolen=1 not followed$/,
      );
      // Give a follow-up request time to arrive, were one ever sent.
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(privateTarget.received, "the private address was never reached").toEqual([]);
    });
  },
);

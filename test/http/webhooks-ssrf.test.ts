import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { postMessage } from "../../src/reactors/webhooks/post.js";
import type { ResolvedAddress } from "../../src/security/webhook-addresses.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { postgresServer } from "../support/databases.js";
import { detailPaths, expectError, registerAgent } from "./helpers.js";
import { waitUntil } from "./transfer-helpers.js";

/** The test's DNS: names the suite made up, and what they resolve to right now. */
const zone = new Map<string, string>([
  ["private.example", "10.0.0.1"],
  ["rebinding.example", "93.184.216.34"],
]);

let t: TestApp;
beforeAll(async () => {
  // WEBHOOKS_ALLOW_PRIVATE is unset here.
  t = await startTestApp({
    database: postgresServer ? "postgres" : "pglite",
    service: {
      webhookResolver: async (hostname): Promise<ResolvedAddress[]> => {
        const address = zone.get(hostname);
        if (!address)
          throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
        return [{ address, family: 4 }];
      },
    },
  });
});
afterAll(async () => t.close());

describe("SSRF: where a webhook may not go (WEBHOOKS_ALLOW_PRIVATE unset)", () => {
  it.each([
    ["http://127.0.0.1/hook", /https/],
    ["http://example.com/hook", /https/],
    ["https://127.0.0.1/hook", /private, loopback or link-local/],
    ["https://169.254.169.254/latest/meta-data", /private, loopback or link-local/],
    ["https://[::1]/hook", /private, loopback or link-local/],
    ["https://[::ffff:127.0.0.1]/hook", /private, loopback or link-local/],
    ["https://100.64.0.1/hook", /private, loopback or link-local/],
    ["https://[fd00::1]/hook", /private, loopback or link-local/],
    ["https://localhost/hook", /private, loopback or link-local/],
    ["https://private.example/hook", /resolves to 10\.0\.0\.1/],
  ])("refuses %s when it is set, at registration and by PATCH", async (url, why) => {
    const account = await t.newAccount();
    const refused = await t.call("POST", "/v1/agents/register", {
      key: account.apiKey,
      body: { agent_id: "hook", public_key: Buffer.alloc(32, 3).toString("base64"), webhook_url: url },
    });
    const error = expectError(refused, 400, "VALIDATION_ERROR");
    expect(detailPaths(error)).toEqual(["webhook_url"]);
    expect(error.message).toMatch(why);
    const listed = await t.call("GET", "/v1/agents", { key: account.apiKey });
    expect(listed.json().agents).toEqual([]);

    const agent = await registerAgent(t, account.apiKey, { agent_id: "plain" });
    const patched = await t.call("PATCH", `/v1/agents/${agent.id}`, {
      key: account.apiKey,
      body: { webhook_url: url },
    });
    expect(detailPaths(expectError(patched, 400, "VALIDATION_ERROR"))).toEqual(["webhook_url"]);
    const shown = await t.call("GET", `/v1/agents/${agent.id}`, { key: account.apiKey });
    expect(shown.json()).toMatchObject({ webhook_url: null, webhook_status: null });
  });

  it("accepts a public https URL, and a name that does not resolve yet (checked again at delivery)", async () => {
    const account = await t.newAccount();
    for (const [slug, url] of [
      ["public", "https://rebinding.example/hook"],
      ["later", "https://not-yet.example/hook"],
    ]) {
      const res = await t.call("POST", "/v1/agents/register", {
        key: account.apiKey,
        body: { agent_id: slug, public_key: Buffer.alloc(32, 4).toString("base64"), webhook_url: url },
      });
      expect(res.statusCode, res.body).toBe(201);
      expect(res.json().webhook_secret).toMatch(/^whsec_/);
    }
  });

  it("checks the address again at each delivery: a name rebound to 10.0.0.1 is refused, never connected", async () => {
    const account = await t.newAccount();
    const agent = await registerAgent(t, account.apiKey, {
      agent_id: "rebound",
      webhook_url: "https://rebinding.example/hook",
    });
    zone.set("rebinding.example", "10.0.0.1");
    const test = await t.call("POST", `/v1/agents/${agent.id}/webhook-test`, { key: account.apiKey });
    expect(test.statusCode, test.body).toBe(202);
    let attempt: { status_code: number | null; error: string | null } | undefined;
    await waitUntil(
      async () => {
        const log = await t.call("GET", `/v1/agents/${agent.id}/webhook-deliveries`, { key: account.apiKey });
        attempt = log.json().deliveries[0]?.attempts[0];
        return attempt !== undefined;
      },
      "the attempt was recorded",
      20_000,
    );
    expect(attempt?.status_code).toBeNull();
    expect(attempt?.error).toMatch(/rebinding\.example resolves to 10\.0\.0\.1/);
  });
});

describe("SSRF at delivery (WEBHOOKS_ALLOW_PRIVATE unset): an attempt never connects to a forbidden address", () => {
  const policy = {
    allowPrivate: false,
    resolve: async (hostname: string): Promise<ResolvedAddress[]> => [
      { address: zone.get(hostname) ?? "93.184.216.34", family: 4 },
    ],
  };
  it.each([
    ["http://127.0.0.1/hook", /https/],
    ["https://127.0.0.1/hook", /private, loopback or link-local/],
    ["https://169.254.169.254/latest/meta-data", /private, loopback or link-local/],
    ["https://[::1]/hook", /private, loopback or link-local/],
    ["https://private.example/hook", /private\.example resolves to 10\.0\.0\.1/],
  ])("%s is refused without a status", async (url, why) => {
    const result = await postMessage(url, {}, "{}", policy, 2000);
    expect(result.statusCode).toBeNull();
    expect(result.error).toMatch(why);
  });
});

import { afterAll, beforeAll, it } from "vitest";
import { ADMIN_TOKEN, randomPublicKey, startTestApp, type TestApp } from "../support/app.js";

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t.close());

const show = (label: string, r: { statusCode: number; body: string; headers: Record<string, unknown> }) =>
  console.log(label, r.statusCode, r.headers["content-type"], r.body.slice(0, 600));

it("probe", async () => {
  const { apiKey, accountId } = await t.newAccount();
  show(
    "badjson",
    await t.call("POST", "/v1/agents/register", {
      key: apiKey,
      body: "{bad",
      headers: { "content-type": "application/json" },
    }),
  );
  show(
    "text",
    await t.call("POST", "/v1/agents/register", {
      key: apiKey,
      body: "hi",
      headers: { "content-type": "text/plain" },
    }),
  );
  show(
    "emptyjson",
    await t.call("POST", "/v1/agents/register", {
      key: apiKey,
      headers: { "content-type": "application/json" },
    }),
  );
  show("missing", await t.call("POST", "/v1/agents/register", { key: apiKey, body: {} }));
  show("array", await t.call("POST", "/v1/agents/register", { key: apiKey, body: [] }));
  show("nobody", await t.call("POST", "/v1/agents/register", { key: apiKey }));
  show(
    "alg",
    await t.call("POST", "/v1/agents/register", {
      key: apiKey,
      body: { agent_id: "x", public_key_algorithm: "RSA" },
    }),
  );
  show(
    "meta",
    await t.call("POST", "/v1/agents/register", {
      key: apiKey,
      body: { agent_id: "x", metadata: { a: "x".repeat(17000) } },
    }),
  );
  show(
    "metaarr",
    await t.call("POST", "/v1/agents/register", { key: apiKey, body: { agent_id: "x", metadata: [1] } }),
  );
  show(
    "nul",
    await t.call("POST", "/v1/agents/register", { key: apiKey, body: { agent_id: "nul", name: "a\u0000b" } }),
  );
  show(
    "afternul",
    await t.call("POST", "/v1/agents/register", {
      key: apiKey,
      body: { agent_id: "after", public_key: randomPublicKey() },
    }),
  );
  show("readyz", await t.call("GET", "/readyz"));
  show("list", await t.call("GET", "/v1/agents", { key: apiKey }));
  show("404", await t.call("GET", "/nope"));
  show("404v1", await t.call("GET", "/v1/nope", { key: apiKey }));
  show("405?", await t.call("PUT", "/v1/agents/register", { key: apiKey }));
  show(
    "idem-bad",
    await t.call("POST", "/v1/api-keys", {
      key: apiKey,
      body: { name: "x" },
      headers: { "idempotency-key": "" },
    }),
  );
  show("keys-noname", await t.call("POST", `/v1/accounts/${accountId}/api-keys`, { key: apiKey }));
  show("clock", await t.call("POST", "/v1/admin/clock", { key: ADMIN_TOKEN, body: { advance_seconds: 10 } }));
  show(
    "adminacct",
    await t.call("POST", "/v1/admin/accounts", { key: ADMIN_TOKEN, body: { email: "A@B.com" } }),
  );
  show(
    "adminacct2",
    await t.call("POST", "/v1/admin/accounts", { key: ADMIN_TOKEN, body: { email: "a@b.COM" } }),
  );
  show(
    "patchtext",
    await t.call("PATCH", "/v1/agents/00000000-0000-0000-0000-000000000000", {
      key: apiKey,
      body: "x",
      headers: { "content-type": "text/plain" },
    }),
  );
  show(
    "patchxml",
    await t.call("PATCH", "/v1/agents/00000000-0000-0000-0000-000000000000", {
      key: apiKey,
      body: "<x/>",
      headers: { "content-type": "application/xml" },
    }),
  );
  show("docs", await t.call("GET", "/docs/json"));
});

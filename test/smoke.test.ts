import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomPublicKey, startTestApp, type TestApp } from "./support/app.js";

describe("smoke", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => t.close());

  it("registers an agent", async () => {
    const { apiKey } = await t.newAccount();
    const res = await t.call("POST", "/v1/agents/register", {
      key: apiKey,
      body: { agent_id: "a1", public_key: randomPublicKey() },
    });
    expect(res.statusCode).toBe(201);
  });
});

import { afterAll, beforeAll, expect, it } from "vitest";
import { registerAgent } from "../http/helpers.js";
import { sendTransfer, waitUntil } from "../http/transfer-helpers.js";
import { startTestApp, type TestApp } from "../support/app.js";

/**
 * The webhook reactor reads the log at a slower pace while the read models show no live webhook
 * anywhere (src/service.ts): what it goes by is HotLookups.knownNoLiveWebhook, which must hold only
 * while that is true, and be forgotten as soon as an agent may have one.
 */
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ env: { WEBHOOKS_ALLOW_PRIVATE: "1" } });
});
afterAll(async () => t.close());

it("knows no agent has a webhook after a transfer, and forgets it once one sets a webhook", async () => {
  const hot = t.service.transferDeps.hot;
  const { apiKey } = await t.newAccount("team");
  await registerAgent(t, apiKey, { agent_id: "alice" });
  const bob = await registerAgent(t, apiKey, { agent_id: "bob" });
  await sendTransfer(t, apiKey);
  await waitUntil(async () => hot.knownNoLiveWebhook(), "the reactor learnt that no agent has a webhook");

  const patched = await t.call("PATCH", `/v1/agents/${bob.id}`, {
    key: apiKey,
    body: { webhook_url: "http://127.0.0.1:9/hook" },
  });
  expect(patched.statusCode).toBe(200);
  // The PATCH answers once the read models show it: from then on no slow pace.
  expect(hot.knownNoLiveWebhook()).toBe(false);
  await sendTransfer(t, apiKey);
  await new Promise((resolve) => setTimeout(resolve, 300));
  expect(hot.knownNoLiveWebhook()).toBe(false);
});

import { afterAll, beforeAll, expect, it } from "vitest";
import { registerAgent } from "../http/helpers.js";
import { sendTransfer, waitUntil } from "../http/transfer-helpers.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { type Receiver, startReceiver } from "../support/webhook-receiver.js";

/**
 * While no agent has a live webhook, the webhook reactor does not wait for the read models on
 * each transfer (src/reactors/webhooks/messages.ts). A webhook enabled when the read models have
 * not shown it yet must still hear of the transfers after it: here the projections are stopped
 * from before the PATCH that sets the URL until after the transfer that follows it.
 */
let t: TestApp;
let receiver: Receiver;
beforeAll(async () => {
  t = await startTestApp({ env: { WEBHOOKS_ALLOW_PRIVATE: "1" } });
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
  await t.close();
});

it("hears of a transfer sent right after its webhook was set, before the read models showed the webhook", async () => {
  const { apiKey } = await t.newAccount("team");
  await registerAgent(t, apiKey, { agent_id: "alice" });
  const bob = await registerAgent(t, apiKey, { agent_id: "bob" });
  // Transfers while no agent anywhere has a webhook: they make no message.
  for (let i = 0; i < 3; i++) await sendTransfer(t, apiKey);
  await new Promise((resolve) => setTimeout(resolve, 300));

  await t.service.engine.stop();
  const patched = t.call("PATCH", `/v1/agents/${bob.id}`, {
    key: apiKey,
    body: { webhook_url: `${receiver.url}?agent=bob` },
  });
  await waitUntil(async () => {
    const events = await t.service.store.readStream(`agent-${bob.id}`);
    return events.some((e) => e.type === "AgentUpdated");
  }, "the webhook was set in the log");
  const sent = await sendTransfer(t, apiKey, undefined, { message: "after the webhook" });
  await new Promise((resolve) => setTimeout(resolve, 300));
  await t.service.engine.start();
  expect((await patched).statusCode).toBe(200);

  await waitUntil(() => receiver.received.length > 0, "bob's webhook heard of the transfer", 15_000);
  const messages = receiver.received.map((r) => JSON.parse(r.body));
  expect(messages.map((m) => [m.type, m.data.id])).toEqual([["transfer.received", sent.id]]);
});

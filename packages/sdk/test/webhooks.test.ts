import { randomBytes } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { verifyWebhook } from "../src/index.js";

const newSecret = () => `whsec_${randomBytes(32).toString("base64")}`;
const body = JSON.stringify({
  type: "webhook.test",
  timestamp: "2026-11-26T10:00:00.000Z",
  data: { agent_id: "a" },
});

/** Headers as a Standard Webhooks sender (the convention's own library) makes them. */
function signed(secrets: string[], at = new Date(), payload = body) {
  const id = "msg_0123";
  const signature = secrets.map((secret) => new Webhook(secret).sign(id, at, payload)).join(" ");
  return {
    "webhook-id": id,
    "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
    "webhook-signature": signature,
  };
}

describe("verifyWebhook (decisions 8.2)", () => {
  it("accepts what the standardwebhooks library signs, with either of two secrets, and returns the message", async () => {
    const [old, fresh] = [newSecret(), newSecret()];
    const headers = signed([fresh, old]);
    expect(await verifyWebhook(old, headers, body)).toEqual(JSON.parse(body));
    expect(await verifyWebhook(fresh, new Headers(headers), new TextEncoder().encode(body))).toEqual(
      JSON.parse(body),
    );
  });

  it("refuses another secret, an altered body, a stale timestamp and missing headers", async () => {
    const secret = newSecret();
    const headers = signed([secret]);
    const refusal = { name: "HandoffError", code: "WEBHOOK_INVALID" };
    await expect(verifyWebhook(newSecret(), headers, body)).rejects.toMatchObject(refusal);
    await expect(verifyWebhook(secret, headers, body.replace("a", "b"))).rejects.toMatchObject(refusal);
    const stale = signed([secret], new Date(Date.now() - 6 * 60 * 1000));
    await expect(verifyWebhook(secret, stale, body)).rejects.toMatchObject(refusal);
    await expect(verifyWebhook(secret, { ...headers, "webhook-id": undefined }, body)).rejects.toMatchObject(
      refusal,
    );
    // A later clock (the receiver's own) is what the tolerance is measured against.
    expect(
      await verifyWebhook(secret, stale, body, { now: new Date(Date.now() - 6 * 60 * 1000) }),
    ).toBeTruthy();
  });
});

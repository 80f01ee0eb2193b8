import type { WebhookDelivery } from "@handoff/sdk";
import { accountClient } from "../environment.js";
import { printJson, printText, warn } from "../output.js";
import { printList } from "../table.js";
import { agentUuid } from "./agents.js";

/**
 * `handoff webhook set AGENT URL`: sets (or, with an empty URL, clears) an agent's endpoint. The
 * first URL ever set brings the signing secret, printed once: it is never shown again.
 */
export async function webhookSet(_values: unknown, [agent, url]: string[]): Promise<number> {
  const client = accountClient("cli");
  const updated = await client.updateAgent(await agentUuid(client, agent ?? ""), {
    webhook_url: url || null,
  });
  printJson(updated);
  if (updated.webhook_secret)
    warn("The webhook_secret above is shown only once: keep it where the receiver can read it.");
  return 0;
}

/** `handoff webhook test AGENT`: queues a webhook.test message; `handoff webhook deliveries` shows it. */
export async function webhookTest(_values: unknown, [agent]: string[]): Promise<number> {
  const client = accountClient("cli");
  const { message_id } = await client.testWebhook(await agentUuid(client, agent ?? ""));
  printText(`Sent webhook.test ${message_id}; see it with: handoff webhook deliveries ${agent}`);
  return 0;
}

/** `handoff webhook deliveries AGENT [--limit N] [--json]`: the newest messages and their attempts. */
export async function webhookDeliveries(
  values: { json?: boolean; limit?: string },
  [agent]: string[],
): Promise<number> {
  const client = accountClient("cli");
  const page = await client.webhookDeliveries(await agentUuid(client, agent ?? ""), {
    ...(values.limit ? { limit: Number(values.limit) } : {}),
  });
  const last = (d: WebhookDelivery) => d.attempts.at(-1);
  printList<WebhookDelivery>(
    values.json,
    page,
    page.deliveries,
    [
      { heading: "MESSAGE", value: (d) => d.message_id },
      { heading: "TYPE", value: (d) => d.type },
      { heading: "STATUS", value: (d) => d.status },
      { heading: "ATTEMPTS", value: (d) => String(d.attempts.length) },
      { heading: "LAST", value: (d) => last(d)?.error ?? (last(d) ? String(last(d)?.status_code) : null) },
      { heading: "NEXT", value: (d) => d.next_attempt_at },
    ],
    "No webhook messages yet: handoff webhook test AGENT sends one.",
  );
  return 0;
}

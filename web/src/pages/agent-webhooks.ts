import type {
  ListedAgent as Agent,
  AgentList,
  WebhookAttempt as Attempt,
  WebhookDelivery as Delivery,
  WebhookDeliveryPage,
} from "@handoff/sdk/types";
import { api, messageOf } from "../api.js";
import { h, replace } from "../dom.js";
import { formatDate } from "../format.js";

/** How many of each agent's newest messages the page lists. */
const RECENT_DELIVERIES = 5;

/**
 * Decisions 8.1–8.3 as a person reads them: each agent of the account, its endpoint, whether it
 * is enabled, and what its newest messages did. A person's session reads what the account's API
 * keys read (4.3), so these are the agents' own operations; nothing here is new to the API.
 */
export async function drawAgentWebhooks(section: HTMLElement): Promise<void> {
  const heading = h("h2", { id: "webhooks-heading" }, "Agents' webhooks");
  try {
    const { agents } = await api<AgentList>("/v1/agents");
    const cards = await Promise.all(agents.map(agentCard));
    replace(
      section,
      heading,
      agents.length === 0
        ? h("p", { class: "empty" }, "This account has no agents. Agents register with an API key.")
        : h("ul", { class: "transfers" }, cards),
    );
  } catch (error) {
    replace(
      section,
      heading,
      h("p", { class: "status", "data-kind": "error", role: "alert" }, messageOf(error)),
    );
  }
}

async function agentCard(agent: Agent): Promise<HTMLLIElement> {
  const deliveries = agent.webhook_url
    ? (
        await api<WebhookDeliveryPage>(
          `/v1/agents/${encodeURIComponent(agent.id)}/webhook-deliveries?limit=${RECENT_DELIVERIES}`,
        )
      ).deliveries
    : [];
  const [badge, label] = statusOf(agent, deliveries[0]);
  return h(
    "li",
    { class: "transfer", "data-agent": agent.agent_id },
    h(
      "div",
      { class: "transfer-head" },
      h("strong", {}, `${agent.name} (${agent.agent_id})`),
      h("span", { class: `badge ${badge}` }, label),
    ),
    agent.webhook_url
      ? h("p", { class: "meta" }, "Endpoint: ", h("code", { class: "endpoint" }, agent.webhook_url))
      : h("p", { class: "empty" }, "No webhook: this agent polls for its files."),
    agent.webhook_status === "disabled"
      ? h(
          "p",
          { class: "hint" },
          "Messages failed for 3 days in a row, so none are sent. Setting the webhook URL again enables it.",
        )
      : null,
    deliveries.length > 0 ? deliveryTable(agent, deliveries) : null,
    agent.webhook_url && deliveries.length === 0 ? h("p", { class: "empty" }, "No messages yet.") : null,
  );
}

/**
 * The badge: the API's `webhook_status`, and "failing" while it is active but its newest
 * message has not got through (retries are still going, or it failed).
 */
function statusOf(agent: Agent, newest: Delivery | undefined): [string, string] {
  if (agent.webhook_status === "disabled") return ["disabled", "Disabled"];
  if (agent.webhook_status !== "active") return ["none", "No webhook"];
  if (newest && newest.status !== "delivered" && newest.attempts.length > 0) return ["failing", "Failing"];
  return ["active", "Enabled"];
}

const RESULT_WORDS: Record<Delivery["status"], string> = {
  delivered: "Delivered",
  pending: "Retrying",
  failed: "Failed",
};

/** What the newest attempt got back: a status code, or why no answer came. */
function answerOf(attempt: Attempt | undefined): string {
  if (!attempt) return "not sent yet";
  if (attempt.status_code !== null) return `HTTP ${attempt.status_code}`;
  return attempt.error ?? "no answer";
}

function deliveryTable(agent: Agent, deliveries: Delivery[]): HTMLTableElement {
  return h(
    "table",
    { "aria-label": `Recent webhook messages of ${agent.agent_id}` },
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        ["Time", "Message", "Attempts", "Result"].map((title) => h("th", { scope: "col" }, title)),
      ),
    ),
    h(
      "tbody",
      {},
      deliveries.map((delivery) => {
        const last = delivery.attempts.at(-1);
        const next = delivery.next_attempt_at ? ` · next try ${formatDate(delivery.next_attempt_at)}` : "";
        return h(
          "tr",
          { "data-message": delivery.message_id },
          h("td", {}, last ? formatDate(last.at) : "—"),
          h("td", {}, delivery.type),
          h("td", {}, String(delivery.attempts.length)),
          h("td", {}, `${RESULT_WORDS[delivery.status]} (${answerOf(last)})${next}`),
        );
      }),
    ),
  );
}

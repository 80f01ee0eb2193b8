import { api } from "../api.js";
import { field, h, replace, showStatus } from "../dom.js";
import { actionForm } from "../form.js";
import { TransferMeter } from "../meter.js";
import type { Page } from "../router.js";
import { type SendStage, sendToAgent } from "../send-transfer.js";
import { currentSession } from "../session.js";

const EXPIRY = [
  ["1h", "1 hour"],
  ["12h", "12 hours"],
  ["24h", "24 hours"],
  ["7d", "7 days"],
  ["14d", "14 days"],
  ["30d", "30 days"],
] as const;

interface Sendable {
  agent_id: string;
  name: string;
  own: boolean;
  account_name?: string;
}

/** Agents the person can pick from: those of connected accounts (decisions 4.6). */
async function agentOptions(): Promise<HTMLOptionElement[]> {
  try {
    const { agents } = await api<{ agents: Sendable[] }>("/v1/agents/sendable");
    return agents.map((agent) =>
      h(
        "option",
        { value: agent.agent_id },
        agent.account_name ? `${agent.name} (${agent.account_name})` : agent.name,
      ),
    );
  } catch {
    return [];
  }
}

/** Says how a send goes: each file's encryption, then the upload, each with bytes, speed and time left. */
function stageDescriber(): (stage: SendStage) => string {
  const meters = new Map<string, TransferMeter>();
  return (stage) => {
    const part = stage.stage === "encrypting" ? `Encrypting ${stage.file}` : "Uploading";
    let meter = meters.get(part);
    if (!meter) {
      meter = new TransferMeter(stage.total);
      meters.set(part, meter);
    }
    return `${part}: ${meter.update(stage.bytes)}`;
  };
}

export const sendPage: Page = {
  title: "Send a file",
  needsSession: true,
  async render({ main }) {
    const agents = h("datalist", { id: "sendable-agents" }, await agentOptions());
    const agent = h("input", {
      type: "text",
      name: "agent",
      list: "sendable-agents",
      required: true,
      maxlength: 64,
      autocomplete: "off",
    });
    const account = h("input", { type: "text", name: "account", maxlength: 200 });
    const message = h("textarea", { name: "message", rows: 3, maxlength: 4000 });
    const expires = h(
      "select",
      { name: "expires" },
      EXPIRY.map(([value, label]) => h("option", { value, selected: value === "24h" }, label)),
    );
    const files = h("input", { type: "file", name: "files", multiple: true, required: true });
    const progress = h("progress", { max: 1, value: 0, hidden: true, "aria-label": "Send progress" });
    const form = actionForm({
      fields: [
        field(
          "Agent",
          agent,
          "The agent's id, for example report-bot. It must belong to an account you are connected with, or one that has sent you files.",
        ),
        field(
          "Agent's account (optional)",
          account,
          "Only needed when several accounts have an agent with that id.",
        ),
        field("Files", files, "Encrypted in this browser before upload, to the agent's key."),
        field("Message (optional)", message),
        field("Available for", expires),
      ],
      submit: "Encrypt and send",
      after: [progress, agents],
      async action(status) {
        const session = currentSession();
        const chosen = [...(files.files ?? [])];
        if (!session) return;
        if (chosen.length === 0) throw new Error("Choose at least one file.");
        progress.hidden = false;
        progress.value = 0;
        showStatus(status, `Looking up ${agent.value.trim()}…`);
        const describe = stageDescriber();
        try {
          const transfer = await sendToAgent(
            {
              from: session.account,
              agent: agent.value.trim(),
              ...(account.value.trim() ? { account: account.value.trim() } : {}),
              ...(message.value.trim() ? { message: message.value.trim() } : {}),
              expiresIn: expires.value,
              files: chosen,
            },
            (stage) => {
              progress.max = Math.max(stage.total, 1);
              progress.value = stage.bytes;
              showStatus(status, describe(stage));
            },
          );
          progress.value = progress.max;
          showStatus(
            status,
            `Sent ${transfer.files.length === 1 ? transfer.files[0]?.name : `${transfer.files.length} files`} to ${transfer.recipient}, end-to-end encrypted (transfer ${transfer.id}).`,
            "ok",
          );
          form.reset();
        } catch (error) {
          progress.hidden = true;
          throw error;
        }
      },
    });
    replace(main, h("h1", {}, "Send a file to an agent"), form);
  },
};

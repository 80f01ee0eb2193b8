import type { ExpiresIn, SendableAgentList, Transfer } from "@handoff/sdk/types";
import { ApiError, api } from "../api.js";
import { field, h, replace, showStatus } from "../dom.js";
import { actionForm } from "../form.js";
import type { Page } from "../router.js";
import { resumeUpload, sendToAgent } from "../send-transfer.js";
import { currentSession } from "../session.js";
import { forgetUpload, type UnfinishedUpload, unfinishedUploads } from "../unfinished-uploads.js";
import { stageShower, unfinishedCard } from "../upload-views.js";

const EXPIRY = [
  ["1h", "1 hour"],
  ["12h", "12 hours"],
  ["24h", "24 hours"],
  ["7d", "7 days"],
  ["14d", "14 days"],
  ["30d", "30 days"],
] as const satisfies readonly (readonly [ExpiresIn, string])[];

/** The lifetime chosen in the form's select, which offers only EXPIRY's values. */
const chosenExpiry = (select: HTMLSelectElement): ExpiresIn =>
  EXPIRY.find(([value]) => value === select.value)?.[0] ?? "24h";

/** Agents the person can pick from: those of connected accounts (decisions 4.6). */
async function agentOptions(): Promise<HTMLOptionElement[]> {
  try {
    const { agents } = await api<SendableAgentList>("/v1/agents/sendable");
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

/** What the person reads once a transfer is on its way. */
function sentWords(transfer: Transfer): string {
  const files = transfer.files.length === 1 ? transfer.files[0]?.name : `${transfer.files.length} files`;
  return `Sent ${files} to ${transfer.recipient}, end-to-end encrypted (transfer ${transfer.id}).`;
}

/** The card of an upload a reload interrupted: resumed with the same file, or discarded (the transfer deleted). */
function unfinishedSend(accountId: string, upload: UnfinishedUpload, done: () => void): HTMLElement {
  return unfinishedCard({
    upload,
    resume: async (chosen, onStage) => sentWords(await resumeUpload(accountId, upload, chosen, onStage)),
    async discard() {
      await api(`/v1/transfers/${encodeURIComponent(upload.transfer_id)}`, { method: "DELETE" }).catch(
        (error) => {
          // Already gone (expired, deleted elsewhere): forgetting it is all that is left.
          if (!(error instanceof ApiError && error.status === 404)) throw error;
        },
      );
      forgetUpload(accountId, upload.transfer_id);
    },
    discarded: done,
  });
}

export const sendPage: Page = {
  title: "Send a file",
  needsSession: true,
  async render({ main }) {
    const session = currentSession();
    if (!session) return;
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
        const chosen = [...(files.files ?? [])];
        if (chosen.length === 0) throw new Error("Choose at least one file.");
        showStatus(status, `Looking up ${agent.value.trim()}…`);
        const show = stageShower(progress, status);
        try {
          const transfer = await sendToAgent(
            {
              from: session.account,
              agent: agent.value.trim(),
              ...(account.value.trim() ? { account: account.value.trim() } : {}),
              ...(message.value.trim() ? { message: message.value.trim() } : {}),
              expiresIn: chosenExpiry(expires),
              files: chosen,
            },
            show,
          );
          progress.value = progress.max;
          showStatus(status, sentWords(transfer), "ok");
          form.reset();
        } catch (error) {
          progress.hidden = true;
          // A large send that stopped on the way can be resumed from above.
          drawUnfinished();
          throw error;
        }
      },
    });
    const unfinished = h("div", {});
    const drawUnfinished = () =>
      replace(
        unfinished,
        unfinishedUploads(session.account.id).map((upload) =>
          unfinishedSend(session.account.id, upload, drawUnfinished),
        ),
      );
    drawUnfinished();
    replace(main, h("h1", {}, "Send a file to an agent"), unfinished, form);
  },
};

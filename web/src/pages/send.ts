import type { ExpiresIn, SendableAgentList, Transfer } from "@handoff/sdk/types";
import { ApiError, api, messageOf } from "../api.js";
import { confirmThen } from "../confirm.js";
import { field, h, replace, showStatus, statusLine } from "../dom.js";
import { actionForm } from "../form.js";
import { formatBytes } from "../format.js";
import { TransferMeter } from "../meter.js";
import type { Page } from "../router.js";
import { resumeUpload, type SendStage, sendToAgent } from "../send-transfer.js";
import { currentSession } from "../session.js";
import { forgetUpload, type UnfinishedUpload, unfinishedUploads } from "../unfinished-uploads.js";

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

/**
 * Shows how a send goes, on its progress bar and status line: each file's encryption, then the
 * upload, each with bytes, speed and time left.
 */
function stageShower(progress: HTMLProgressElement, status: HTMLElement): (stage: SendStage) => void {
  const meters = new Map<string, TransferMeter>();
  progress.hidden = false;
  progress.value = 0;
  return (stage) => {
    const part = stage.stage === "encrypting" ? `Encrypting ${stage.file}` : "Uploading";
    let meter = meters.get(part);
    if (!meter) {
      meter = new TransferMeter(stage.total);
      meters.set(part, meter);
    }
    progress.max = Math.max(stage.total, 1);
    progress.value = stage.bytes;
    showStatus(status, `${part}: ${meter.update(stage.bytes)}`);
  };
}

/** What the person reads once a transfer is on its way. */
function sentWords(transfer: Transfer): string {
  const files = transfer.files.length === 1 ? transfer.files[0]?.name : `${transfer.files.length} files`;
  return `Sent ${files} to ${transfer.recipient}, end-to-end encrypted (transfer ${transfer.id}).`;
}

/**
 * An upload a reload (or a closed tab) interrupted (decisions 7.2). The page cannot reopen the
 * file, so it asks for it again: choosing the same one (name, size, last change) goes on from the
 * server's offset. "Discard" deletes the unfinished transfer.
 */
function unfinishedCard(accountId: string, upload: UnfinishedUpload, done: () => void): HTMLElement {
  const names = upload.files.map((file) => `${file.name} (${formatBytes(file.size)})`).join(", ");
  const several = upload.files.length > 1;
  const input = h("input", { type: "file", name: "same-files", multiple: several, required: true });
  const progress = h("progress", { max: 1, value: 0, hidden: true, "aria-label": "Resume progress" });
  const discard = h("button", { type: "button", class: "danger" }, "Discard");
  const form = actionForm({
    layout: "inline",
    fields: [
      field(several ? "The same files" : "The same file", input, "The upload goes on where it stopped."),
      discard,
    ],
    submit: "Resume upload",
    after: [progress],
    async action(status) {
      const transfer = await resumeUpload(
        accountId,
        upload,
        [...(input.files ?? [])],
        stageShower(progress, status),
      );
      progress.value = progress.max;
      showStatus(status, sentWords(transfer), "ok");
    },
  });
  input.addEventListener("change", () => form.requestSubmit());
  const discarding = statusLine();
  discard.addEventListener("click", () =>
    confirmThen(
      {
        title: "Discard this upload?",
        message: `${names} will not be sent, and what was uploaded is deleted. This cannot be undone.`,
        confirm: "Discard upload",
      },
      async () => {
        await api(`/v1/transfers/${encodeURIComponent(upload.transfer_id)}`, { method: "DELETE" }).catch(
          (error) => {
            // Already gone (expired, deleted elsewhere): forgetting it is all that is left.
            if (!(error instanceof ApiError && error.status === 404)) throw error;
          },
        );
        forgetUpload(accountId, upload.transfer_id);
        done();
      },
    ).catch((error) => showStatus(discarding, messageOf(error), "error")),
  );
  return h(
    "section",
    { class: "notice unfinished", "data-upload": upload.transfer_id, "aria-label": "Unfinished upload" },
    h(
      "p",
      {},
      `Unfinished upload: ${names} to ${upload.recipient} — choose the same ${several ? "files" : "file"} to resume.`,
    ),
    form,
    discarding,
  );
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
          unfinishedCard(session.account.id, upload, drawUnfinished),
        ),
      );
    drawUnfinished();
    replace(main, h("h1", {}, "Send a file to an agent"), unfinished, form);
  },
};

import { fromBase64, keyFingerprint } from "@handoff/sdk/crypto";
import { LogViewError } from "@handoff/sdk/transparency";
import type { PublicRequest } from "@handoff/sdk/types";
import { ApiError, messageOf } from "../api.js";
import { type Child, field, h, replace, showStatus } from "../dom.js";
import { filePicker } from "../file-picker.js";
import { actionForm } from "../form.js";
import { formatBytes, formatDate } from "../format.js";
import { provenRequest } from "../key-transparency.js";
import {
  agentLabel,
  answerRequest,
  discardAnswer,
  linkOwner,
  readRequest,
  refusal,
  resumeAnswer,
} from "../request-transfer.js";
import type { Page } from "../router.js";
import { unfinishedUploads } from "../unfinished-uploads.js";
import { stageShower, unfinishedCard } from "../upload-views.js";

/** What the person reads when the link itself refuses (decisions 10.2), in words, with what to do. */
function linkRefusal(error: unknown): { title: string; words: string } | null {
  if (error instanceof LogViewError)
    return {
      title: "This link's key cannot be trusted",
      words: `Nothing was encrypted or sent: ${error.message}. Tell whoever sent you the link.`,
    };
  if (!(error instanceof ApiError)) return null;
  switch (error.status) {
    case 404:
      return {
        title: "This link does not exist",
        words:
          "No request matches this address. Check that the whole link was copied, or ask whoever sent it for it again.",
      };
    case 410:
      return {
        title: "This link is closed",
        words:
          "It has been used, it has expired, or its owner revoked it: nothing can be sent through it. Ask whoever sent it for a new one.",
      };
    case 429:
      return {
        title: "Too many tries",
        words: "This link was used too often in the last minute. Wait a minute, then try again.",
      };
    case 413:
      return { title: "Too large", words: `The files are larger than this link takes: ${error.describe()}.` };
    default:
      return null;
  }
}

/** An error while sending, in words: the link's own refusals as above, anything else as it was said. */
function sendError(error: unknown): Error {
  const refused = linkRefusal(error);
  return new Error(refused ? `${refused.title}. ${refused.words}` : messageOf(error));
}

/** The page in place of the form: a heading that takes focus, so a screen reader says what happened. */
function endWith(main: HTMLElement, title: string, ...body: Child[]): void {
  const heading = h("h1", { tabindex: -1 }, title);
  replace(main, heading, ...body);
  heading.focus();
}

/** Who asks, the message as text, the key the files are encrypted to, and what the link takes. */
function describeRequest(request: PublicRequest): Child[] {
  const agent = agentLabel(request);
  const files = request.max_files === 1 ? "1 file" : `up to ${request.max_files} files`;
  return [
    h("h1", {}, request.title),
    h("p", { class: "lead" }, h("strong", {}, agent), " asks you to send files."),
    request.message &&
      h("p", { class: "request-message", "aria-label": `Message from ${agent}` }, request.message),
    h(
      "section",
      { class: "request-key", "aria-labelledby": "request-key-title" },
      h("h2", { id: "request-key-title" }, "Encrypted before it leaves this browser"),
      h(
        "p",
        {},
        `Your files are encrypted here, to ${agent}'s key, before the first byte is sent: Handoff stores them encrypted and cannot read them. You need no account.`,
      ),
      h(
        "p",
        {},
        "Key fingerprint: ",
        h("code", { class: "fingerprint" }, keyFingerprint(fromBase64(request.agent.public_key))),
      ),
      h("p", { class: "hint" }, "The service's transparency log proves this is the agent's current key."),
    ),
    h(
      "p",
      { class: "hint request-limits" },
      `This link takes ${files}, ${formatBytes(request.max_total_size)} in all, until ${formatDate(request.expires_at)}.`,
    ),
  ];
}

/** The confirmation: what went, to whom, and the transfer's id. */
function sent(main: HTMLElement, request: PublicRequest, transferId: string, what: string): void {
  endWith(
    main,
    "Sent",
    h("p", { class: "lead" }, `${what} reached ${agentLabel(request)}, end-to-end encrypted.`),
    h("p", {}, "Transfer id: ", h("code", { class: "transfer-id" }, transferId)),
    h("p", {}, "Keep the id if you want to refer to this transfer. You can close this page."),
  );
}

const countOf = (n: number) => (n === 1 ? "1 file" : `${n} files`);

export const requestLinkPage: Page = {
  title: "Send files",
  async render({ main, query }) {
    const token = query.get("token") ?? "";
    let request: PublicRequest;
    try {
      // Nothing is encrypted to a key the transparency log does not prove (decisions 9.6).
      request = await provenRequest(() => readRequest(token));
    } catch (error) {
      const refused = linkRefusal(error);
      endWith(
        main,
        refused?.title ?? "This link cannot be opened",
        h("p", {}, refused?.words ?? messageOf(error)),
      );
      return;
    }
    document.title = `${request.title} · Handoff`;
    const agent = agentLabel(request);
    const name = request.ask_sender_name
      ? h("input", {
          type: "text",
          name: "sender-name",
          required: true,
          maxlength: 200,
          autocomplete: "name",
        })
      : null;
    const email = request.ask_sender_email
      ? h("input", {
          type: "email",
          name: "sender-email",
          required: true,
          maxlength: 320,
          autocomplete: "email",
        })
      : null;
    const picker = filePicker({
      legend: "What to send",
      filesLabel: request.max_files === 1 ? "A file" : "Files",
      folders: true,
      multiple: request.max_files > 1,
    });
    const progress = h("progress", { max: 1, value: 0, hidden: true, "aria-label": "Upload progress" });
    const form = actionForm({
      fields: [
        name && field("Your name", name, `Shown to ${agent} as you type it, marked as not checked.`),
        email &&
          field("Your e-mail address", email, `Shown to ${agent} as you type it, marked as not checked.`),
        picker.element,
      ],
      submit: "Encrypt and send",
      after: [progress],
      async action(status) {
        const files = picker.chosen();
        const refused = refusal(request, files);
        if (refused) throw new Error(refused);
        showStatus(status, "Encrypting and uploading…");
        try {
          const confirmed = await answerRequest(
            token,
            request,
            {
              files,
              ...(name?.value.trim() ? { senderName: name.value.trim() } : {}),
              ...(email?.value.trim() ? { senderEmail: email.value.trim() } : {}),
            },
            stageShower(progress, status),
          );
          const size = files.reduce((sum, { file }) => sum + file.size, 0);
          sent(main, request, confirmed.transfer_id, `${countOf(files.length)} (${formatBytes(size)})`);
        } catch (error) {
          progress.hidden = true;
          // An upload cut on the way can be resumed from the card above.
          drawUnfinished();
          throw sendError(error);
        }
      },
    });
    const unfinished = h("div", {});
    const drawUnfinished = () =>
      replace(
        unfinished,
        unfinishedUploads(linkOwner(token)).map((upload) =>
          unfinishedCard({
            upload,
            async resume(chosen, onStage) {
              try {
                const confirmed = await resumeAnswer(token, upload, chosen, onStage);
                const size = upload.files.reduce((sum, file) => sum + file.size, 0);
                sent(
                  main,
                  request,
                  confirmed.transfer_id,
                  `${countOf(upload.files.length)} (${formatBytes(size)})`,
                );
                return "Sent.";
              } catch (error) {
                throw sendError(error);
              }
            },
            discard: () => discardAnswer(token, upload),
            discarded: drawUnfinished,
          }),
        ),
      );
    drawUnfinished();
    replace(main, ...describeRequest(request), unfinished, form);
  },
};

import { messageOf } from "./api.js";
import { confirmThen } from "./confirm.js";
import { h, showStatus, statusLine } from "./dom.js";
import { filePicker } from "./file-picker.js";
import { actionForm } from "./form.js";
import { formatBytes } from "./format.js";
import { TransferMeter } from "./meter.js";
import type { ChosenFile, SendStage } from "./resumable-send.js";
import type { UnfinishedUpload } from "./unfinished-uploads.js";

/**
 * Shows how a send goes, on its progress bar and status line: each file's encryption, then the
 * upload, each with bytes, speed and time left.
 */
export function stageShower(progress: HTMLProgressElement, status: HTMLElement): (stage: SendStage) => void {
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

export interface UnfinishedCardOptions {
  upload: UnfinishedUpload;
  /** Goes on with the files chosen again; answers what to say once sent. */
  resume(chosen: ChosenFile[], onStage: (stage: SendStage) => void): Promise<string>;
  /** Throws the unfinished transfer away (asked first). */
  discard(): Promise<void>;
  /** After a discard: the page draws its unfinished uploads again. */
  discarded(): void;
}

/**
 * An upload a reload (or a closed tab) interrupted (decisions 7.2). The page cannot reopen the
 * files, so it asks for them again: choosing the same ones (name, size, last change; a folder's
 * by their path in it) goes on from the server's offset. "Discard" asks, then throws it away.
 */
export function unfinishedCard({ upload, resume, discard, discarded }: UnfinishedCardOptions): HTMLElement {
  const names = upload.files.map((file) => `${file.name} (${formatBytes(file.size)})`).join(", ");
  const several = upload.files.length > 1;
  const progress = h("progress", { max: 1, value: 0, hidden: true, "aria-label": "Resume progress" });
  const discardButton = h("button", { type: "button", class: "danger" }, "Discard");
  const picker = filePicker({
    legend: "Resume",
    filesLabel: several ? "The same files" : "The same file",
    folders: upload.files.some((file) => file.name.includes("/")),
    multiple: several,
    hint: "The upload goes on where it stopped.",
    onChange: () => form.requestSubmit(),
  });
  const form = actionForm({
    layout: "inline",
    fields: [picker.element, discardButton],
    submit: "Resume upload",
    after: [progress],
    async action(status) {
      const said = await resume(picker.chosen(), stageShower(progress, status));
      progress.value = progress.max;
      showStatus(status, said, "ok");
    },
  });
  const discarding = statusLine();
  discardButton.addEventListener("click", () =>
    confirmThen(
      {
        title: "Discard this upload?",
        message: `${names} will not be sent, and what was uploaded is deleted. This cannot be undone.`,
        confirm: "Discard upload",
      },
      async () => {
        await discard();
        discarded();
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

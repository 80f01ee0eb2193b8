import { plainSizeOf, unwrapContentKey } from "@handoff/sdk/crypto";
import { senderLabel } from "@handoff/sdk/sender";
import type { DownloadAnswer, ReceivingKey, Transfer } from "@handoff/sdk/types";
import { api, messageOf } from "../api.js";
import { h, replace, showStatus, statusLine } from "../dom.js";
import { savedName } from "../file-tree.js";
import { formatBytes } from "../format.js";
import { TransferMeter } from "../meter.js";
import { fetchReceivingKey, forgetUnlocked, type KeyPair, unlockedKey } from "../receiving-key.js";
import type { Page } from "../router.js";
import { saveDecrypted } from "../save.js";
import { datesOf, deleteButton, downloadsWords, transferCard } from "../transfer-card.js";
import { receivingPasswordForm, unlockForm } from "./receiving-password.js";

export const inboxPage: Page = {
  title: "Inbox",
  needsSession: true,
  async render({ main, query }) {
    const keyArea = h("section", { "aria-labelledby": "key-heading" });
    const list = h("section", { "aria-labelledby": "files-heading" });
    replace(main, h("h1", {}, "Inbox"), keyArea, list);

    const refresh = async () => {
      const key = await fetchReceivingKey();
      const pair = key ? unlockedKey(key.key_version) : null;
      drawKeyArea(keyArea, key, pair, refresh);
      await drawTransfers(list, key, pair, refresh);
      highlight(list, query.get("transfer"));
    };
    try {
      await refresh();
    } catch (error) {
      replace(list, h("p", { class: "status", role: "alert", "data-kind": "error" }, messageOf(error)));
    }
  },
};

/** Opened from a transfer's own address: bring that transfer into view. */
function highlight(list: HTMLElement, transferId: string | null) {
  if (!transferId) return;
  const item = [...list.querySelectorAll<HTMLElement>("[data-transfer]")].find(
    (el) => el.dataset.transfer === transferId,
  );
  item?.classList.add("highlight");
  item?.scrollIntoView({ block: "center" });
}

function drawKeyArea(
  area: HTMLElement,
  key: ReceivingKey | null,
  pair: KeyPair | null,
  refresh: () => Promise<void>,
) {
  if (!key) {
    replace(
      area,
      h("h2", { id: "key-heading" }, "Set your receiving password"),
      h(
        "p",
        {},
        "Files are encrypted to a key made from this password, in your browser. Files already waiting for you are unlocked as soon as it is set.",
      ),
      receivingPasswordForm(false, () => void refresh()),
    );
    return;
  }
  if (!pair) {
    replace(
      area,
      h("h2", { id: "key-heading" }, "Unlock your files"),
      unlockForm(key, () => void refresh()),
    );
    return;
  }
  replace(
    area,
    h("h2", { id: "key-heading", class: "visually-hidden" }, "Receiving key"),
    h(
      "p",
      { class: "unlocked" },
      `Unlocked in this tab (receiving key version ${key.key_version}). `,
      h(
        "button",
        {
          type: "button",
          class: "link",
          onclick: () => {
            forgetUnlocked();
            void refresh();
          },
        },
        "Lock",
      ),
    ),
  );
}

/** The newest draw of each list: an older one whose answer comes later must not draw over it. */
const newestDraw = new WeakMap<HTMLElement, number>();

/**
 * `refresh` draws the page again as it is by then: the receiving key is asked for anew, so a list
 * drawn before the key was set, or while it was locked, opens files with it once it is.
 */
async function drawTransfers(
  list: HTMLElement,
  key: ReceivingKey | null,
  pair: KeyPair | null,
  refresh: () => Promise<void>,
) {
  const draw = (newestDraw.get(list) ?? 0) + 1;
  newestDraw.set(list, draw);
  const { transfers, total } = await api<{ transfers: Transfer[]; total: number }>(
    "/v1/transfers?direction=received&limit=100",
  );
  if (newestDraw.get(list) !== draw) return;
  // Redrawn later (Refresh, a deletion), the list opens files with the key as it is by then: set,
  // unlocked or locked since this draw.
  const redraw = () => void refresh();
  const reload = h("button", { type: "button", class: "secondary", onclick: redraw }, "Refresh");
  replace(
    list,
    h("div", { class: "row-between" }, h("h2", { id: "files-heading" }, `Received files (${total})`), reload),
    transfers.length === 0
      ? h("p", { class: "empty" }, "Nothing yet. Files an agent sends to your address appear here.")
      : h(
          "ul",
          { class: "transfers" },
          transfers.map((transfer) => transferItem(transfer, pair, redraw)),
        ),
  );
  if (!key && transfers.some((t) => t.status === "pending_recipient")) {
    list.prepend(
      h("p", { class: "notice" }, "Some files are waiting: set your receiving password above to open them."),
    );
  }
}

function transferItem(transfer: Transfer, pair: KeyPair | null, redraw: () => void): HTMLLIElement {
  const status = statusLine();
  const progress = h("progress", {
    max: 1,
    value: 0,
    hidden: true,
    "aria-label": `Download progress of ${transfer.id}`,
  });
  const ready = transfer.status === "active";
  const meta = h("p", { class: "meta" });
  const counted = (downloads: number) => {
    meta.textContent = `${datesOf(transfer, "Received")} · ${downloadsWords(downloads, transfer.max_downloads)}`;
  };
  counted(transfer.downloads);
  const buttons: HTMLButtonElement[] = [];
  const view: DownloadView = { buttons, progress, status, counted };
  const downloadButton = (label: string, name: string, files: number[] | "all", kind?: "secondary") => {
    const button = h(
      "button",
      { type: "button", class: kind, "aria-label": name, disabled: !ready || !pair },
      label,
    );
    button.addEventListener("click", () => void download(transfer, pair as KeyPair, files, view));
    buttons.push(button);
    return button;
  };
  const several = transfer.files.length > 1;
  return transferCard(transfer, {
    party: senderLabel(transfer),
    meta,
    fileActions: several
      ? (index) => downloadButton("Download", `Download ${transfer.files[index]?.name}`, [index], "secondary")
      : undefined,
    actions: [
      h(
        "div",
        { class: "row" },
        several
          ? downloadButton(`Download all (${transfer.files.length})`, "Download all", "all")
          : downloadButton("Download", "Download", "all"),
        deleteButton(transfer, status, redraw),
        progress,
      ),
      !pair && ready ? h("p", { class: "hint" }, "Unlock your files above to download.") : null,
      status,
    ],
  });
}

/** Where a transfer's download shows what it does. */
interface DownloadView {
  buttons: HTMLButtonElement[];
  progress: HTMLProgressElement;
  status: HTMLElement;
  /** Shows the transfer's download count after a counted download. */
  counted(downloads: number): void;
}

/** Download links live 15 minutes (decisions 3): an answer is reused a little less long than that. */
const LINKS_REUSED_MS = 14 * 60_000;
const answers = new Map<string, { answer: DownloadAnswer; until: number }>();

/**
 * The transfer's signed links. A download counts against max_downloads, so one answer serves
 * every file saved from it while its links live: saving each file of a transfer in turn is one
 * download, as "Download all" is.
 */
async function downloadLinks(transfer: Transfer, counted: (downloads: number) => void) {
  const held = answers.get(transfer.id);
  if (held && held.until > Date.now()) return held.answer;
  const answer = await api<DownloadAnswer>(`/v1/transfers/${encodeURIComponent(transfer.id)}/download`);
  answers.set(transfer.id, { answer, until: Date.now() + LINKS_REUSED_MS });
  counted(answer.downloads);
  return answer;
}

async function download(transfer: Transfer, pair: KeyPair, which: number[] | "all", view: DownloadView) {
  const { buttons, progress, status } = view;
  for (const button of buttons) button.disabled = true;
  try {
    showStatus(status, "Preparing the download…");
    const answer = await downloadLinks(transfer, view.counted);
    if (!answer.is_encrypted || !answer.encrypted_key)
      throw new Error("this transfer is not end-to-end encrypted to you");
    const contentKey = await unwrapContentKey(answer.encrypted_key, pair.privateKey).catch(() => {
      // The server keeps only the current key's salt, so an earlier key cannot be derived again here.
      throw new Error(
        `these files were encrypted to your receiving key version ${answer.recipient_key_version ?? "?"}, before you changed your receiving password: the current key cannot open them`,
      );
    });
    const files = which === "all" ? answer.files : which.map((index) => answer.files[index]);
    const chosen = files.filter((file) => file !== undefined);
    const meter = new TransferMeter(chosen.reduce((sum, file) => sum + plainSizeOf(file.size), 0));
    progress.max = Math.max(meter.total, 1);
    progress.value = 0;
    progress.hidden = false;
    let done = 0;
    let method = "stream";
    for (const file of chosen) {
      const size = plainSizeOf(file.size);
      showStatus(status, `Decrypting ${file.file_name}…`);
      method = await saveDecrypted(
        {
          url: file.download_url,
          name: savedName(file.file_name),
          size,
          contentKey: contentKey.slice(),
          encryptionIv: file.encryption_iv ?? "",
        },
        (bytes) => {
          progress.value = done + bytes;
          showStatus(status, `Decrypting ${file.file_name}: ${meter.update(done + bytes)}`);
        },
      );
      done += size;
    }
    contentKey.fill(0);
    progress.value = progress.max;
    showStatus(
      status,
      `Saved ${chosen.length === 1 ? chosen[0]?.file_name : `${chosen.length} files`} (${formatBytes(done)}), decrypted and verified${method === "memory" ? " (in memory: this browser has no streaming save)" : ""}.`,
      "ok",
    );
  } catch (error) {
    showStatus(status, messageOf(error), "error");
  } finally {
    for (const button of buttons) button.disabled = false;
  }
}

import { plainSizeOf, unwrapContentKey } from "@handoff/sdk/crypto";
import { api, messageOf } from "../api.js";
import { h, replace, showStatus, statusLine } from "../dom.js";
import { formatBytes, formatDate } from "../format.js";
import {
  fetchReceivingKey,
  forgetUnlocked,
  type KeyPair,
  type ReceivingKey,
  unlockedKey,
} from "../receiving-key.js";
import type { Page } from "../router.js";
import { saveDecrypted } from "../save.js";
import type { Transfer } from "../send-transfer.js";
import { receivingPasswordForm, unlockForm } from "./receiving-password.js";

interface DownloadAnswer {
  downloads: number;
  files: { file_name: string; download_url: string; size: number; encryption_iv?: string | null }[];
  is_encrypted: boolean;
  encrypted_key: string | null;
  recipient_key_version: number | null;
}

const STATUS_WORDS: Record<string, string> = {
  active: "Ready",
  pending_recipient: "Waiting for your receiving key",
  downloaded: "Download limit reached",
  expired: "Expired",
  deleted: "Deleted",
};

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
      await drawTransfers(list, key, pair);
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

async function drawTransfers(list: HTMLElement, key: ReceivingKey | null, pair: KeyPair | null) {
  const { transfers, total } = await api<{ transfers: Transfer[]; total: number }>(
    "/v1/transfers?direction=received&limit=100",
  );
  const reload = h(
    "button",
    { type: "button", class: "secondary", onclick: () => void drawTransfers(list, key, pair) },
    "Refresh",
  );
  replace(
    list,
    h("div", { class: "row-between" }, h("h2", { id: "files-heading" }, `Received files (${total})`), reload),
    transfers.length === 0
      ? h("p", { class: "empty" }, "Nothing yet. Files an agent sends to your address appear here.")
      : h(
          "ul",
          { class: "transfers" },
          transfers.map((transfer) => transferItem(transfer, pair)),
        ),
  );
  if (!key && transfers.some((t) => t.status === "pending_recipient")) {
    list.prepend(
      h("p", { class: "notice" }, "Some files are waiting: set your receiving password above to open them."),
    );
  }
}

function transferItem(transfer: Transfer, pair: KeyPair | null): HTMLLIElement {
  const status = statusLine();
  const progress = h("progress", {
    max: 1,
    value: 0,
    hidden: true,
    "aria-label": `Download progress of ${transfer.id}`,
  });
  const ready = transfer.status === "active";
  const button = h("button", { type: "button", disabled: !ready || !pair }, "Download");
  const meta = h("p", { class: "meta" });
  const describeMeta = (downloads: number) => {
    meta.textContent = `Received ${formatDate(transfer.created_at)} · expires ${formatDate(transfer.expires_at)} · downloads ${downloads} of ${transfer.max_downloads}`;
  };
  describeMeta(transfer.downloads);
  button.addEventListener(
    "click",
    () => void download(transfer, pair as KeyPair, { button, progress, status, counted: describeMeta }),
  );
  return h(
    "li",
    { class: "transfer", "data-transfer": transfer.id },
    h(
      "div",
      { class: "transfer-head" },
      h("strong", {}, transfer.sender),
      h("span", { class: `badge ${transfer.status}` }, STATUS_WORDS[transfer.status] ?? transfer.status),
    ),
    transfer.message ? h("p", { class: "message" }, transfer.message) : null,
    h(
      "ul",
      { class: "files" },
      transfer.files.map((file) =>
        h("li", {}, file.name, h("span", { class: "size" }, formatBytes(file.size))),
      ),
    ),
    meta,
    h("div", { class: "row" }, button, progress),
    !pair && ready ? h("p", { class: "hint" }, "Unlock your files above to download.") : null,
    status,
  );
}

/** One download of the transfer (it counts against max_downloads), then each file saved in turn. */
interface DownloadView {
  button: HTMLButtonElement;
  progress: HTMLProgressElement;
  status: HTMLElement;
  /** Shows the transfer's download count after this download. */
  counted(downloads: number): void;
}

async function download(
  transfer: Transfer,
  pair: KeyPair,
  { button, progress, status, counted }: DownloadView,
) {
  button.disabled = true;
  try {
    showStatus(status, "Preparing the download…");
    const answer = await api<DownloadAnswer>(`/v1/transfers/${encodeURIComponent(transfer.id)}/download`);
    counted(answer.downloads);
    if (!answer.is_encrypted || !answer.encrypted_key)
      throw new Error("this transfer is not end-to-end encrypted to you");
    const contentKey = await unwrapContentKey(answer.encrypted_key, pair.privateKey).catch(() => {
      // The server keeps only the current key's salt, so an earlier key cannot be derived again here.
      throw new Error(
        `these files were encrypted to your receiving key version ${answer.recipient_key_version ?? "?"}, before you changed your receiving password: the current key cannot open them`,
      );
    });
    const total = answer.files.reduce((sum, file) => sum + plainSizeOf(file.size), 0);
    progress.max = Math.max(total, 1);
    progress.hidden = false;
    let done = 0;
    let method = "stream";
    for (const file of answer.files) {
      const size = plainSizeOf(file.size);
      showStatus(status, `Decrypting ${file.file_name}…`);
      method = await saveDecrypted(
        {
          url: file.download_url,
          name: file.file_name,
          size,
          contentKey: contentKey.slice(),
          encryptionIv: file.encryption_iv ?? "",
        },
        (bytes) => {
          progress.value = done + bytes;
        },
      );
      done += size;
    }
    contentKey.fill(0);
    progress.value = progress.max;
    showStatus(
      status,
      `Saved ${answer.files.length === 1 ? answer.files[0]?.file_name : `${answer.files.length} files`}, decrypted and verified${method === "memory" ? " (in memory: this browser has no streaming save)" : ""}.`,
      "ok",
    );
  } catch (error) {
    showStatus(status, messageOf(error), "error");
  } finally {
    button.disabled = false;
  }
}

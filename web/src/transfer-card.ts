import { plainSizeOf } from "@handoff/sdk/crypto";
import type { Transfer } from "@handoff/sdk/types";
import { api, messageOf } from "./api.js";
import { confirmAction } from "./confirm.js";
import { type Child, h, showStatus } from "./dom.js";
import { fileTree, hasFolders, type TreeFile, type TreeFolder } from "./file-tree.js";
import { formatBytes, formatDate } from "./format.js";

const STATUS_WORDS: Record<string, string> = {
  active: "Ready",
  pending_recipient: "Waiting for the receiving key",
  downloaded: "Download limit reached",
  expired: "Expired",
  deleted: "Deleted",
};

/** How often a transfer has been downloaded, in words. */
export function downloadsWords(downloads: number, max: number): string {
  return `downloaded ${downloads === 1 ? "once" : `${downloads} times`} of ${max}`;
}

export interface CardParts {
  /** Who the other side is: the sender in the inbox, the recipient among sent transfers. */
  party: string;
  /** The facts line under the files (dates, downloads); kept so a page can update it. */
  meta: HTMLElement;
  /** What to show after each file's name and size (a download button). */
  fileActions?: (index: number) => Child;
  /** The buttons of the whole transfer, and what follows them (progress, status line). */
  actions: Child[];
}

/** One transfer as both lists show it: the other side, its state, its message and files, its actions. */
export function transferCard(transfer: Transfer, parts: CardParts): HTMLLIElement {
  return h(
    "li",
    { class: "transfer", "data-transfer": transfer.id },
    h(
      "div",
      { class: "transfer-head" },
      h("strong", {}, parts.party),
      h("span", { class: `badge ${transfer.status}` }, STATUS_WORDS[transfer.status] ?? transfer.status),
    ),
    transfer.message ? h("p", { class: "message" }, transfer.message) : null,
    fileList(transfer, parts.fileActions),
    parts.meta,
    ...parts.actions,
  );
}

/**
 * The transfer's files: a plain list, or, when names hold folders (decisions 7.3), a tree whose
 * folders open and close (a `details` element each, open at first) and say what they hold.
 */
function fileList(transfer: Transfer, actions: CardParts["fileActions"]): HTMLUListElement {
  const fileItem = (file: TreeFile) =>
    h(
      "li",
      { class: "file" },
      h("span", { class: "name" }, file.label),
      h("span", { class: "size" }, formatBytes(file.size)),
      actions?.(file.index),
    );
  // An encrypted file's size on the wire counts the records' headers and tags: show what it holds.
  const tree = fileTree(
    transfer.files.map((file) => ({
      name: file.name,
      size: transfer.is_encrypted ? plainSizeOf(file.size) : file.size,
    })),
  );
  // Without folders the files stay in the order they were sent.
  if (!hasFolders(tree))
    return h("ul", { class: "files" }, [...tree.files].sort((a, b) => a.index - b.index).map(fileItem));
  const folderItems = (folder: TreeFolder): HTMLLIElement[] => [
    ...folder.folders.map((child) =>
      h(
        "li",
        { class: "folder" },
        h(
          "details",
          { open: true },
          h(
            "summary",
            {},
            h("span", { class: "name" }, `${child.name}/`),
            h(
              "span",
              { class: "size" },
              `${child.count === 1 ? "1 file" : `${child.count} files`}, ${formatBytes(child.size)}`,
            ),
          ),
          h("ul", {}, folderItems(child)),
        ),
      ),
    ),
    ...folder.files.map(fileItem),
  ];
  return h("ul", { class: "files tree", "aria-label": "Files and folders" }, folderItems(tree));
}

/** "Sent 3 Jan · expires 4 Jan" for a transfer's facts line. */
export function datesOf(transfer: Transfer, verb: "Sent" | "Received"): string {
  return `${verb} ${formatDate(transfer.created_at)} · expires ${formatDate(transfer.expires_at)}`;
}

/**
 * The delete button of a transfer, sent or received (none once deleted): asks first (it cannot be undone), then
 * deletes it for both sides (its file data goes at once) and calls `deleted`.
 */
export function deleteButton(
  transfer: Transfer,
  status: HTMLElement,
  deleted: () => void,
): HTMLButtonElement | null {
  if (transfer.status === "deleted") return null;
  const button = h("button", { type: "button", class: "danger" }, "Delete");
  button.addEventListener("click", async () => {
    const files =
      transfer.files.length === 1 ? `“${transfer.files[0]?.name}”` : `${transfer.files.length} files`;
    const confirmed = await confirmAction({
      title: "Delete this transfer?",
      message: `${files} will be deleted for the sender and the recipient alike: nobody can download them again. This cannot be undone.`,
      confirm: "Delete transfer",
    });
    if (!confirmed) return;
    button.disabled = true;
    try {
      await api(`/v1/transfers/${encodeURIComponent(transfer.id)}`, { method: "DELETE" });
      deleted();
    } catch (error) {
      showStatus(status, messageOf(error), "error");
      button.disabled = false;
    }
  });
  return button;
}

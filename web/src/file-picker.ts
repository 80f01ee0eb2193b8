import { h, replace } from "./dom.js";
import { formatBytes } from "./format.js";
import { byOwnName, type ChosenFile } from "./resumable-send.js";

export interface FilePickerOptions {
  /** The fieldset's legend. */
  legend: string;
  /** The label of the files input ("Files", "The same file"). */
  filesLabel: string;
  /** Offer a folder too: a folder input and folders dropped, each file named by its path in it (7.3). */
  folders: boolean;
  multiple: boolean;
  hint?: string;
  /** Called after each choice, by either input or a drop. */
  onChange?: (chosen: ChosenFile[]) => void;
}

export interface FilePicker {
  element: HTMLFieldSetElement;
  chosen(): ChosenFile[];
  clear(): void;
}

let pickers = 0;

/**
 * Files, or a folder, chosen by picker or dropped: labelled inputs a keyboard reaches (the drop
 * area is the mouse's shortcut to them, not a control of its own), and a line saying what is chosen.
 * A folder's files are named by their path from the folder's name on (`project/docs/guide.txt`),
 * as `handoff send DIR` names them (decisions 7.3).
 */
export function filePicker(options: FilePickerOptions): FilePicker {
  const id = `picker-${++pickers}`;
  let chosen: ChosenFile[] = [];
  const summary = h("p", { class: "chosen", id: `${id}-chosen`, "aria-live": "polite" });
  const files = h("input", {
    type: "file",
    id: `${id}-files`,
    name: "files",
    multiple: options.multiple,
    "aria-describedby": `${id}-chosen`,
  });
  const folder = options.folders
    ? h("input", {
        type: "file",
        id: `${id}-folder`,
        name: "folder",
        webkitdirectory: true,
        "aria-describedby": `${id}-chosen`,
      })
    : null;
  const choose = (next: ChosenFile[]) => {
    chosen = next;
    replace(summary, describe(next));
    options.onChange?.(next);
  };
  files.addEventListener("change", () => {
    if (folder) folder.value = "";
    choose(byOwnName([...(files.files ?? [])]));
  });
  folder?.addEventListener("change", () => {
    files.value = "";
    choose([...(folder.files ?? [])].map((file) => ({ name: file.webkitRelativePath || file.name, file })));
  });
  const drop = h(
    "div",
    { class: "drop" },
    h("div", { class: "field" }, h("label", { for: files.id }, options.filesLabel), files),
    folder && h("div", { class: "field" }, h("label", { for: folder.id }, "Or a folder"), folder),
    h("p", { class: "hint" }, options.folders ? "Or drop files or a folder here." : "Or drop them here."),
  );
  drop.addEventListener("dragover", (event) => {
    event.preventDefault();
    drop.dataset.over = "";
  });
  drop.addEventListener("dragleave", () => delete drop.dataset.over);
  drop.addEventListener("drop", (event) => {
    event.preventDefault();
    delete drop.dataset.over;
    if (!event.dataTransfer) return;
    files.value = "";
    if (folder) folder.value = "";
    void droppedFiles(event.dataTransfer, options.folders).then(choose);
  });
  const element = h(
    "fieldset",
    { class: "files" },
    h("legend", {}, options.legend),
    options.hint && h("p", { class: "hint" }, options.hint),
    drop,
    summary,
  );
  return {
    element,
    chosen: () => chosen,
    clear() {
      files.value = "";
      if (folder) folder.value = "";
      choose([]);
    },
  };
}

/** "3 files, 1.2 MB: a.txt, b.txt, c.txt" (the first few names). */
function describe(chosen: ChosenFile[]): string {
  if (chosen.length === 0) return "";
  const size = chosen.reduce((sum, { file }) => sum + file.size, 0);
  const shown = chosen.slice(0, 3).map((item) => item.name);
  const more = chosen.length > shown.length ? `, and ${chosen.length - shown.length} more` : "";
  const count = chosen.length === 1 ? "1 file" : `${chosen.length} files`;
  return `Chosen: ${count}, ${formatBytes(size)}: ${shown.join(", ")}${more}.`;
}

/**
 * What was dropped: files by their own name, a folder's files (at any depth) by their path. The
 * entries must be taken during the drop event; reading them may go on after it.
 */
async function droppedFiles(data: DataTransfer, folders: boolean): Promise<ChosenFile[]> {
  const dropped = [...data.items]
    .filter((item) => item.kind === "file")
    .map((item) => ({ entry: folders ? item.webkitGetAsEntry() : null, file: item.getAsFile() }));
  const all: ChosenFile[] = [];
  for (const { entry, file } of dropped) {
    if (entry) all.push(...(await entryFiles(entry)));
    else if (file) all.push({ name: file.name, file });
  }
  return all;
}

async function entryFiles(entry: FileSystemEntry): Promise<ChosenFile[]> {
  const name = entry.fullPath.replace(/^\//, "");
  if (entry.isFile) {
    const file = await new Promise<File>((resolve, reject) =>
      (entry as FileSystemFileEntry).file(resolve, reject),
    );
    return [{ name, file }];
  }
  const reader = (entry as FileSystemDirectoryEntry).createReader();
  const found: ChosenFile[] = [];
  // readEntries answers in batches until an empty one.
  for (;;) {
    const batch = await new Promise<FileSystemEntry[]>((resolve, reject) =>
      reader.readEntries(resolve, reject),
    );
    if (batch.length === 0) return found;
    for (const child of batch) found.push(...(await entryFiles(child)));
  }
}

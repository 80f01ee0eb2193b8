import { fileNameProblem, segmentsOf } from "@handoff/sdk/file-names";

/** A file of a transfer as the tree holds it: its place in the transfer's list, its name and size. */
export interface TreeFile {
  index: number;
  /** The file's whole name, as the transfer has it. */
  name: string;
  /** What the tree shows: the last segment, or the whole name when it breaks the rules. */
  label: string;
  size: number;
}

export interface TreeFolder {
  name: string;
  folders: TreeFolder[];
  files: TreeFile[];
  /** Files and bytes under it, at any depth. */
  count: number;
  size: number;
}

/**
 * The folders of a transfer (decisions 7.3): each name split at `/` into folders and a file.
 * The server checks names, but the page does not trust it to: a name that breaks the rule stays
 * one whole label at the top, never a folder. Folders come first, then files, each by name.
 */
export function fileTree(files: { name: string; size: number }[]): TreeFolder {
  const root = emptyFolder("");
  files.forEach((file, index) => {
    const valid = fileNameProblem(file.name) === null;
    const segments = valid ? segmentsOf(file.name) : [file.name];
    const label = segments.pop() as string;
    let folder = root;
    for (const segment of [undefined, ...segments]) {
      if (segment !== undefined) folder = childFolder(folder, segment);
      folder.count++;
      folder.size += file.size;
    }
    folder.files.push({ index, name: file.name, label, size: file.size });
  });
  sortFolder(root);
  return root;
}

/** Whether a transfer has folders at all: without them its files stay a plain list. */
export const hasFolders = (tree: TreeFolder) => tree.folders.length > 0;

function emptyFolder(name: string): TreeFolder {
  return { name, folders: [], files: [], count: 0, size: 0 };
}

function childFolder(parent: TreeFolder, name: string): TreeFolder {
  let child = parent.folders.find((folder) => folder.name === name);
  if (!child) {
    child = emptyFolder(name);
    parent.folders.push(child);
  }
  return child;
}

const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

function sortFolder(folder: TreeFolder): void {
  folder.folders.sort(byName);
  folder.files.sort((a, b) => byName({ name: a.label }, { name: b.label }));
  for (const child of folder.folders) sortFolder(child);
}

/**
 * The name a browser saves a file under. A download cannot make folders, so a file in folders is
 * saved as its path with `_` for `/` (`reports_2024_q1.csv`): the folders stay in the name, so two
 * `q1.csv` of different folders do not meet. A name that breaks 7.3 is refused rather than handed
 * to the browser.
 */
export function savedName(name: string): string {
  const problem = fileNameProblem(name);
  if (problem) throw new Error(`this file is not saved: ${problem}`);
  return segmentsOf(name).join("_");
}

import { refuse } from "../../../domain/decider.js";
import { servesFiles, takesUploads } from "../../../domain/transfer.js";
import { loadTransfer, type TransferDeps } from "./record.js";

/**
 * The signed file links' use case: the presigned PUT and the tus resource write a file's bytes,
 * the download link reads them. Each asks the transfer's own rule (takesUploads, servesFiles in
 * domain/transfer.ts) on its stream, never on a read model, so a confirm, a deletion or an
 * expiry stops every link at once.
 */

const closed = () => refuse("GONE", "this transfer no longer takes uploads");

/** The transfer a blob key `transfers/<transfer id>/<file id>` belongs to. */
const transferOfKey = (key: string) => key.split("/")[1] ?? "";

async function takesUploadsNow(deps: TransferDeps, key: string): Promise<boolean> {
  const { state } = await loadTransfer(deps, transferOfKey(key));
  return takesUploads(state, deps.clock.now().toISOString());
}

/** Refuses (410 GONE) an upload request on the file at `key` unless its transfer takes uploads. */
export async function requireTakesUploads(deps: TransferDeps, key: string): Promise<void> {
  if (!(await takesUploadsNow(deps, key))) throw closed();
}

/**
 * Writes bytes of the file at `key` (`write`: the store's put or append) while its transfer takes
 * uploads: refused before a byte is read when it does not. Once the file is whole (`whole`, by
 * default every write), a transfer that closed while the bytes were arriving gets them deleted
 * and the request refused: its data must not outlive it.
 */
export async function writeFileBytes<Written>(
  deps: TransferDeps,
  key: string,
  write: () => Promise<Written>,
  whole: (written: Written) => boolean = () => true,
): Promise<Written> {
  await requireTakesUploads(deps, key);
  const written = await write();
  if (whole(written) && !(await takesUploadsNow(deps, key))) {
    await deps.blobs.delete([key]);
    throw closed();
  }
  return written;
}

/** Whether the file at `key` may be served now (servesFiles): read from its transfer's stream. */
export async function mayServeFile(deps: TransferDeps, key: string): Promise<boolean> {
  const { state } = await loadTransfer(deps, transferOfKey(key));
  return servesFiles(state, deps.clock.now().toISOString());
}

import { createHash } from "node:crypto";
import { type BlobStore, SMALL_BLOB_BYTES } from "./port.js";

/**
 * Lowercase hex SHA-256 of a stored blob, read back from the store, or null when it is missing:
 * what a presigned or resumable upload's bytes hash to once they are all stored (decisions 9.5).
 * A small blob is read whole; a larger one streams through the hash, never held whole.
 */
export async function storedSha256(blobs: BlobStore, key: string): Promise<string | null> {
  const blob = await blobs.open(key);
  if (!blob) return null;
  const hash = createHash("sha256");
  if (blob.size <= SMALL_BLOB_BYTES) return hash.update(await blob.bytes()).digest("hex");
  for await (const chunk of await blob.read()) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

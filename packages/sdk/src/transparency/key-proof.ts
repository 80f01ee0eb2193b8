import { fromBase64 } from "../crypto/base64.js";
import { entryLeafHash, type LogEntry } from "./entry.js";
import { verifyInclusion } from "./merkle.js";
import { type Checkpoint, NoteError, openCheckpoint, type VerifierKey } from "./note.js";

/** What agent answers and resolve carry (decisions 9.6): the leaf that set the agent's keys, proven. */
export interface KeyProof {
  leaf_index: number;
  entry: LogEntry;
  tree_size: number;
  checkpoint: string;
  inclusion: string[];
}

/** The keys an answer gives for an agent, which its proof must back. */
export interface AnsweredKeys {
  public_key: string | null;
  /** Absent where the answer names no signing key (a request link's agent, which is only encrypted to). */
  signing_public_key?: string | null;
  key_version: number | null;
}

/**
 * Checks a key proof against the pinned log key: the checkpoint is signed by the log and of the
 * proof's size, the entry is the agent's key registration holding exactly the keys answered, and
 * it is included at its leaf. Returns the checkpoint, for the caller to check against the ones it
 * saw before; throws an Error saying what failed.
 */
export function checkKeyProof(proof: KeyProof, keys: AnsweredKeys, logKey: VerifierKey): Checkpoint {
  let checkpoint: Checkpoint;
  try {
    checkpoint = openCheckpoint(proof.checkpoint, logKey);
  } catch (error) {
    if (error instanceof NoteError) throw new Error(`its checkpoint is not the log's: ${error.message}`);
    throw error;
  }
  if (checkpoint.size !== proof.tree_size) throw new Error("its checkpoint is of another tree size");
  const { entry } = proof;
  const data = entry.data as { publicKey?: unknown; signingPublicKey?: unknown; keyVersion?: unknown };
  const backed =
    entry.type === "AgentConnected" &&
    data.publicKey === keys.public_key &&
    (keys.signing_public_key === undefined || (data.signingPublicKey ?? null) === keys.signing_public_key) &&
    data.keyVersion === keys.key_version;
  if (!backed) throw new Error("the log's entry does not hold the keys answered");
  let hashes: Uint8Array[];
  try {
    hashes = proof.inclusion.map(fromBase64);
  } catch {
    throw new Error("its inclusion proof is not base64");
  }
  if (!verifyInclusion(entryLeafHash(entry), proof.leaf_index, proof.tree_size, hashes, checkpoint.root)) {
    throw new Error("its inclusion proof does not verify against the signed checkpoint");
  }
  return checkpoint;
}

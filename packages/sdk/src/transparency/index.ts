/**
 * Verifiable custody (decisions 9): the log's Merkle tree (RFC 6962/9162), its entries (RFC 8785
 * JSON) and signed checkpoints (C2SP signed notes). Pure and browser-safe: the server builds
 * proofs and signs with it, every client verifies with it.
 */
export { canonicalJson, entryBytes, entryLeafHash, type LogEntry } from "./entry.js";
export { type ExportReport, verifyExport } from "./export.js";
export { type AnsweredKeys, checkKeyProof, type KeyProof } from "./key-proof.js";
export {
  CompactRange,
  consistencyProof,
  EMPTY_ROOT,
  equalHashes,
  HASH_SIZE,
  type Hash,
  inclusionProof,
  leafHash,
  leavesSource,
  nodeHash,
  type SubtreeSource,
  splitPoint,
  subtreeHash,
  treeRoot,
  verifyConsistency,
  verifyInclusion,
} from "./merkle.js";
export {
  type Checkpoint,
  checkpointBody,
  formatVerifierKey,
  NoteError,
  noteKeyId,
  openCheckpoint,
  openNote,
  parseCheckpoint,
  parseVerifierKey,
  signNote,
  type VerifierKey,
} from "./note.js";
export { RECEIPT_TYPE, type Receipt, signReceipt, verifyReceipt } from "./receipt.js";

import { fromBase64 } from "../crypto/base64.js";
import { entryLeafHash, type LogEntry } from "./entry.js";
import { verifyInclusion } from "./merkle.js";
import { openCheckpoint, type VerifierKey } from "./note.js";
import { verifyReceipt } from "./receipt.js";

/** What `handoff log verify` found in an audit export (decisions 9.7). */
export interface ExportReport {
  ok: boolean;
  origin: string | null;
  tree_size: number | null;
  entries: number;
  receipts: { verified: number; unverifiable: number };
  /** The first thing wrong, with its line (1-based), when not ok. */
  problem?: { line: number; message: string };
}

interface ExportLine {
  leaf_index: number;
  entry: LogEntry;
  inclusion: string[];
}

/**
 * Checks an audit export offline with nothing but the log's verifier key: the checkpoint's
 * signature, every entry's inclusion proof against it, that leaves come in increasing order, and
 * each receipt's signature against the signing key its recipient agent's latest key entry before it
 * gives (a receipt whose agent's key entry is not in the export is counted unverifiable). Stops at
 * the first problem and names its line.
 */
export async function verifyExport(
  lines: Iterable<string> | AsyncIterable<string>,
  key: VerifierKey,
): Promise<ExportReport> {
  const report: ExportReport = {
    ok: true,
    origin: null,
    tree_size: null,
    entries: 0,
    receipts: { verified: 0, unverifiable: 0 },
  };
  const fail = (line: number, message: string): ExportReport => ({
    ...report,
    ok: false,
    problem: { line, message },
  });
  const signingKeys = new Map<string, string | null>();
  let root: Uint8Array | null = null;
  let size = 0;
  let previous = -1;
  let number = 0;
  for await (const text of lines) {
    number++;
    if (text.trim() === "") continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return fail(number, "not JSON");
    }
    if (root === null) {
      const note = (parsed as { checkpoint?: unknown }).checkpoint;
      if (typeof note !== "string") return fail(number, "the export does not start with a checkpoint");
      try {
        const checkpoint = openCheckpoint(note, key);
        root = checkpoint.root;
        size = checkpoint.size;
        report.origin = checkpoint.origin;
        report.tree_size = checkpoint.size;
      } catch (error) {
        return fail(number, `the checkpoint does not verify: ${(error as Error).message}`);
      }
      continue;
    }
    const line = parsed as ExportLine;
    if (
      !Number.isSafeInteger(line.leaf_index) ||
      !Array.isArray(line.inclusion) ||
      typeof line.entry !== "object"
    ) {
      return fail(number, "not an export entry");
    }
    if (line.leaf_index <= previous)
      return fail(number, `leaf ${line.leaf_index} comes after leaf ${previous}`);
    previous = line.leaf_index;
    let proof: Uint8Array[];
    try {
      proof = line.inclusion.map(fromBase64);
    } catch {
      return fail(number, "its inclusion proof is not base64");
    }
    if (!verifyInclusion(entryLeafHash(line.entry), line.leaf_index, size, proof, root)) {
      return fail(number, `leaf ${line.leaf_index} is not in the checkpoint's tree as given`);
    }
    report.entries++;
    const { type, stream, data } = line.entry;
    if (type === "AgentConnected") {
      signingKeys.set(stream, (data.signingPublicKey as string | null | undefined) ?? null);
    } else if (type === "ReceiptRecorded") {
      const { receipt, signature } = data as { receipt?: { recipient?: unknown }; signature?: unknown };
      const signer =
        typeof receipt?.recipient === "string" ? signingKeys.get(`agent-${receipt.recipient}`) : undefined;
      if (!signer || typeof signature !== "string") {
        report.receipts.unverifiable++;
      } else if (verifyReceipt(fromBase64(signer), receipt, signature)) {
        report.receipts.verified++;
      } else {
        return fail(number, `the receipt at leaf ${line.leaf_index} is not signed by its recipient's key`);
      }
    }
  }
  if (root === null) return fail(number, "the export is empty");
  return report;
}

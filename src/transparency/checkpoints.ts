import { ed25519PublicKeyOf } from "@handoff/sdk/crypto";
import {
  type Checkpoint,
  checkpointBody,
  formatVerifierKey,
  type Hash,
  parseVerifierKey,
  signNote,
  type VerifierKey,
} from "@handoff/sdk/transparency";
import type { Knex } from "knex";
import { batchedPerDatabase } from "../db/batched.js";

/** A signed checkpoint as kept: its size and the note's text, byte for byte as first served. */
export interface SignedCheckpoint {
  size: number;
  note: string;
}

/** The newest checkpoint, read once for all who ask at the same time (every key proof asks). */
const newestCheckpoint = batchedPerDatabase(async (db, asks: null[]) => {
  const row = await db("log_checkpoints")
    .orderBy("tree_size", "desc")
    .first<{ tree_size: string | number; note: string } | undefined>("tree_size", "note");
  const newest = row ? { size: Number(row.tree_size), note: row.note } : null;
  return asks.map(() => newest);
});

/**
 * The log's key and its signed checkpoints (decisions 9.2). Each note is signed once and kept; the
 * same size is never signed twice with different bytes (Ed25519 is deterministic, and a second
 * instance's insert of the same size is passed over).
 */
export class Checkpoints {
  readonly publicKey: Uint8Array;
  readonly vkey: string;
  readonly verifier: VerifierKey;

  constructor(
    private readonly db: Knex,
    readonly origin: string,
    private readonly seed: Uint8Array,
  ) {
    this.publicKey = ed25519PublicKeyOf(seed);
    this.vkey = formatVerifierKey(origin, this.publicKey);
    this.verifier = parseVerifierKey(this.vkey);
  }

  /** Signs the tree of `size` leaves with this root, inside the writer's transaction. */
  async sign(trx: Knex.Transaction, size: number, root: Hash): Promise<void> {
    const checkpoint: Checkpoint = { origin: this.origin, size, root };
    const note = signNote(checkpointBody(checkpoint), this.origin, this.seed);
    await trx("log_checkpoints").insert({ tree_size: size, note }).onConflict("tree_size").ignore();
  }

  newest(): Promise<SignedCheckpoint | null> {
    return newestCheckpoint(this.db).call(null);
  }

  async at(size: number): Promise<SignedCheckpoint | null> {
    const row = await this.db("log_checkpoints")
      .where({ tree_size: size })
      .first<{ note: string } | undefined>("note");
    return row ? { size, note: row.note } : null;
  }

  /** Every checkpoint from the smallest, a page at a time: what the tamper check compares against. */
  async *all(pageSize = 1000): AsyncGenerator<SignedCheckpoint> {
    let after = -1;
    for (;;) {
      const rows = await this.db("log_checkpoints")
        .where("tree_size", ">", after)
        .orderBy("tree_size")
        .limit(pageSize)
        .select<{ tree_size: string | number; note: string }[]>("tree_size", "note");
      for (const row of rows) yield { size: Number(row.tree_size), note: row.note };
      const last = rows.at(-1);
      if (!last || rows.length < pageSize) return;
      after = Number(last.tree_size);
    }
  }
}

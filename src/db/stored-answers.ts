import type { Knex } from "knex";
import { seal, unseal } from "../security/secrets.js";

/**
 * The table of Idempotency-Key records (decisions 3.17): the answers kept for repeated requests.
 * The HTTP layer claims and fills them (src/http/idempotency.ts); the housekeeper prunes them and
 * an erasure deletes the ones that show its person.
 */

/** How long an answer is kept for a repeat of its request (decisions 3.17). */
export const RETENTION_MS = 24 * 60 * 60 * 1000;
/**
 * Stored answers are sealed under the server key: some carry a secret shown once (a new API key,
 * a connection token), which must not sit in the database in clear (docs/security.md).
 */
const SEAL_PURPOSE = "idempotency-replay";

/** Deletes the records past their 24 hours, the answers they hold with them. */
export async function pruneIdempotencyRecords(db: Knex, now: Date): Promise<number> {
  return db("idempotency_records")
    .where("created_at", "<", new Date(now.getTime() - RETENTION_MS))
    .del();
}

/**
 * Erasure (decisions 6.5): deletes the stored answers that show an e-mail address, and every answer
 * of the erased account (`accountId`). Answers are sealed, so each kept one is opened to look.
 */
export async function forgetStoredAnswers(
  db: Knex,
  serverKey: Buffer,
  email: string,
  accountId: string | null,
): Promise<void> {
  if (accountId)
    await db("idempotency_records")
      .where({ scope: `account:${accountId}` })
      .delete();
  const rows = await db("idempotency_records")
    .whereNotNull("body")
    .select<{ scope: string; key: string; body: string }[]>("scope", "key", "body");
  const address = email.trim().toLowerCase();
  for (const row of rows) {
    if (openedAnswer(serverKey, row.body).toLowerCase().includes(address)) {
      await db("idempotency_records").where({ scope: row.scope, key: row.key }).delete();
    }
  }
}

/** A stored answer in clear; one stored before answers were sealed is JSON as it is. */
export function openedAnswer(serverKey: Buffer, body: string): string {
  return body.startsWith("{") ? body : unseal(serverKey, SEAL_PURPOSE, body).toString("utf8");
}

export function sealedAnswer(serverKey: Buffer, body: string): string {
  return seal(serverKey, SEAL_PURPOSE, body);
}

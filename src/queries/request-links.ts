import type { Knex } from "knex";
import type { RequestLinkRow } from "../../projections/request-links.js";
import { batchedPerDatabase } from "../db/batched.js";
import { isUuid } from "./agents.js";

export type { RequestLinkRow };

/** A request link with the receiving agent's public face: all that the by-token side may show. */
export interface RequestLinkWithAgent extends RequestLinkRow {
  agent_slug: string;
  agent_name: string | null;
  agent_public_key: string | null;
  agent_key_version: number | null;
  /** The log position of the event that set the agent's current keys (decisions 9.6). */
  agent_key_position: string | null;
  agent_connection_status: string;
}

function withAgent(db: Knex) {
  return db("request_links as r")
    .join("agents as a", "a.id", "r.agent_id")
    .select<RequestLinkWithAgent[]>(
      "r.*",
      "a.agent_id as agent_slug",
      "a.name as agent_name",
      "a.public_key as agent_public_key",
      "a.key_version as agent_key_version",
      "a.key_position as agent_key_position",
      "a.connection_status as agent_connection_status",
    );
}

/** One of an account's links by id; another account's reads as missing (decisions 10.1). */
export async function findRequestLink(
  db: Knex,
  accountId: string,
  id: string,
): Promise<RequestLinkWithAgent | undefined> {
  if (!isUuid(id)) return undefined;
  return withAgent(db).where({ "r.id": id, "r.account_id": accountId }).first();
}

/** The account's links, newest first. */
export function listRequestLinks(db: Knex, accountId: string): Promise<RequestLinkWithAgent[]> {
  return withAgent(db)
    .where({ "r.account_id": accountId })
    .orderBy([
      { column: "r.created_at", order: "desc" },
      { column: "r.id", order: "desc" },
    ]);
}

/** The link whose token has this SHA-256 digest (the token itself is never stored). */
export function findRequestLinkByTokenHash(
  db: Knex,
  tokenHash: string,
): Promise<RequestLinkWithAgent | undefined> {
  return linksByTokenHash(db).call(tokenHash);
}

/** Every request through a link starts here: many senders at once cost one statement. */
const linksByTokenHash = batchedPerDatabase(async (db, tokenHashes: string[]) => {
  const rows = await withAgent(db).whereIn("r.token_hash", [...new Set(tokenHashes)]);
  const byHash = new Map(rows.map((row) => [row.token_hash, row]));
  return tokenHashes.map((tokenHash) => byHash.get(tokenHash));
});

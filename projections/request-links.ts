import type { RequestLinkEvent } from "../domain/request-link.js";
import { categoryProjection, endedOnErasure } from "./projection.js";
import type { Changed, Inserted } from "./rows.js";

export interface RequestLinkRow {
  id: string;
  account_id: string;
  agent_id: string;
  token_hash: string;
  title: string;
  message: string | null;
  max_files: number;
  max_total_size: number;
  max_uses: number;
  uses: number;
  ask_sender_name: boolean;
  ask_sender_email: boolean;
  expires_at: Date;
  created_at: Date;
  /** As recorded: the status a reader sees at a time is requestStatusAt's (domain/request-link.ts). */
  revoked_at: Date | null;
}

const linkLives = categoryProjection<RequestLinkEvent>({
  name: "request_links",
  tables: ["request_links"],
  category: "request_link",
  async apply(trx, event, id) {
    switch (event.type) {
      case "RequestLinkCreated": {
        const d = event.data;
        await trx("request_links").insert({
          id,
          account_id: d.accountId,
          agent_id: d.agentId,
          token_hash: d.tokenHash,
          title: d.title,
          message: d.message,
          max_files: d.maxFiles,
          max_total_size: d.maxTotalSize,
          max_uses: d.maxUses,
          ask_sender_name: d.askSenderName,
          ask_sender_email: d.askSenderEmail,
          expires_at: d.expiresAt,
          created_at: d.createdAt,
        } satisfies Inserted<RequestLinkRow, "uses">);
        return;
      }
      case "RequestLinkUsed":
        await trx("request_links")
          .where({ id })
          .update({ uses: event.data.uses } satisfies Changed<RequestLinkRow>);
        return;
      case "RequestLinkRevoked":
        await trx("request_links")
          .where({ id })
          .update({ revoked_at: event.data.revokedAt } satisfies Changed<RequestLinkRow>);
        return;
      default:
        return;
    }
  },
});

/** An erased account's links all read as revoked from the erasure on, like its API keys. */
export const requestLinksProjection = endedOnErasure(linkLives, "request_links", "revoked_at");

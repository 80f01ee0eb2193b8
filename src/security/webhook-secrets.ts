import { createHmac, randomBytes } from "node:crypto";
import type { Knex } from "knex";
import { seal, unseal } from "./secrets.js";

const PREFIX = "whsec_";
const PURPOSE = "webhook-secret";

/** Decisions 8.1: `whsec_` + base64 of 32 random bytes. */
export const newWebhookSecret = (): string => `${PREFIX}${randomBytes(32).toString("base64")}`;

/** Standard Webhooks: the key is the decoded bytes after the prefix. */
const keyOf = (secret: string) => Buffer.from(secret.slice(PREFIX.length), "base64");

/**
 * The `webhook-signature` header (decisions 8.2): `v1,` + base64 HMAC-SHA256 of
 * `id.timestamp.body` under each secret, space separated when two sign.
 */
export function signatureHeader(
  secrets: string[],
  messageId: string,
  timestamp: number,
  body: string,
): string {
  const signed = `${messageId}.${timestamp}.${body}`;
  return secrets
    .map((secret) => `v1,${createHmac("sha256", keyOf(secret)).update(signed).digest("base64")}`)
    .join(" ");
}

interface EndpointRow {
  sealed_secret: string;
  sealed_previous: string | null;
  previous_valid_until: Date | null;
}

/**
 * Each agent's webhook secrets, sealed under the server key in `webhook_endpoints`, never in an
 * event: the log is never rewritten, so a secret kept there could never be taken back.
 */
export class WebhookSecrets {
  constructor(
    private readonly db: Knex,
    private readonly serverKey: Buffer,
  ) {}

  /** Makes the agent's first secret and returns it; null when it has one already (never shown twice). */
  async issue(agentId: string): Promise<string | null> {
    const secret = newWebhookSecret();
    const inserted = await this.db("webhook_endpoints")
      .insert({ agent_id: agentId, sealed_secret: seal(this.serverKey, PURPOSE, secret) })
      .onConflict("agent_id")
      .ignore()
      .returning("agent_id");
    return inserted.length > 0 ? secret : null;
  }

  /**
   * A rotation's first step: a new secret, kept beside the current one under `rotationId` until
   * `promote` makes it current; a later rotation's stage replaces an unpromoted one. An agent
   * without any secret yet (its first one lost to a crash) signs with this one at once.
   */
  async stage(agentId: string, rotationId: string): Promise<string> {
    const secret = newWebhookSecret();
    const sealed = seal(this.serverKey, PURPOSE, secret);
    await this.db.raw(
      `insert into webhook_endpoints (agent_id, sealed_secret, sealed_pending, pending_rotation)
         values (?, ?, ?, ?)
         on conflict (agent_id) do update set sealed_pending = excluded.sealed_pending,
           pending_rotation = excluded.pending_rotation`,
      [agentId, sealed, sealed, rotationId],
    );
    return secret;
  }

  /**
   * Once rotation `rotationId` is recorded: its staged secret becomes current and the one it
   * replaces keeps signing until `previousValidUntil`. Idempotent: nothing happens unless that
   * rotation is still the staged one.
   */
  async promote(agentId: string, rotationId: string, previousValidUntil: Date): Promise<void> {
    await this.db.raw(
      `update webhook_endpoints
         set sealed_previous = case when sealed_secret = sealed_pending then null else sealed_secret end,
           previous_valid_until = ?, sealed_secret = sealed_pending,
           sealed_pending = null, pending_rotation = null
         where agent_id = ? and pending_rotation = ?`,
      [previousValidUntil, agentId, rotationId],
    );
  }

  /** The secrets that sign a message sent at `now`: the current one, and the previous while it lasts. */
  async signing(agentId: string, now: Date): Promise<string[]> {
    const row = await this.db("webhook_endpoints")
      .where({ agent_id: agentId })
      .first<EndpointRow | undefined>();
    if (!row) return [];
    const secrets = [unseal(this.serverKey, PURPOSE, row.sealed_secret).toString()];
    if (row.sealed_previous && row.previous_valid_until && now < new Date(row.previous_valid_until))
      secrets.push(unseal(this.serverKey, PURPOSE, row.sealed_previous).toString());
    return secrets;
  }
}

import type { Knex } from "knex";
import { categoryOf } from "../../domain/streams.js";
import type { RecordedEvent } from "../eventstore/port.js";
import type { PersonalData } from "../privacy/personal-data.js";
import { type AgentRow, anyLiveWebhook, findConnectedAgentBySlug } from "../queries/agents.js";
import { type AgentWithAccount, visibleAgents } from "../queries/connections.js";

/** How many answers each cache holds (the oldest go first). */
const HELD = 10_000;
/**
 * The categories of the events every request makes, which none of the cached look-ups is built
 * from: a transfer's life and the sender's books. Any other event drops every cached answer.
 */
const UNRELATED = new Set(["transfer", "usage"]);

/**
 * Answers of read-model look-ups that nearly every request makes (its API key, its agents),
 * remembered between the projection engine's batches. The engine drops them all whenever it
 * applies an event other than a transfer's or the books' (keys, agents, accounts, connections,
 * people, erasures change rarely), and whenever it skips events another instance applied, before
 * anyone waiting on the read models is told; a look-up that raced such a batch is not
 * remembered. So a revoked key or a disconnected agent stops working here as soon as the read
 * models show it (at once after the revoke answers on this instance; on another instance, once
 * its engine has heard of the append: milliseconds with LISTEN/NOTIFY). Only found rows are
 * remembered; while the engine does not run, nothing is.
 */
export class HotRows<Row> {
  private readonly answers = new Map<string, Row>();
  /**
   * Look-ups under way, shared by whoever asks the same meanwhile: after a drop, every request in
   * flight would otherwise read the same row at once (32 reads of one API key under 32 clients).
   */
  private readonly asking = new Map<string, Promise<Row | undefined>>();
  /** Moves on every drop: an answer read across one is not remembered. */
  private generation = 0;
  private live = false;

  /** The answer held for `key`, without looking it up. */
  held(key: string): Row | undefined {
    return this.answers.get(key);
  }

  get(key: string, look: () => Promise<Row | undefined>): Promise<Row | undefined> {
    const held = this.answers.get(key);
    if (held !== undefined) return Promise.resolve(held);
    const asked = this.asking.get(key);
    if (asked) return asked;
    const generation = this.generation;
    const lookup = look()
      .then((row) => {
        if (row !== undefined && this.live && generation === this.generation) {
          this.answers.set(key, row);
          if (this.answers.size > HELD) this.answers.delete(this.answers.keys().next().value as string);
        }
        return row;
      })
      .finally(() => {
        if (this.asking.get(key) === lookup) this.asking.delete(key);
      });
    this.asking.set(key, lookup);
    return lookup;
  }

  /** The engine runs from now on (true) or stopped (false); either way what was held goes. */
  following(live: boolean): void {
    this.live = live;
    this.drop();
  }

  /** Forgets every answer; a look-up still under way is not shared with anyone who asks from now on. */
  drop(): void {
    this.generation++;
    this.answers.clear();
    this.asking.clear();
  }
}

/** What the engine tells the caches built on its read models. */
export interface ReadModelFollower {
  following(live: boolean): void;
  applied(batch: RecordedEvent[]): void;
  drop(): void;
}

/** The live API key with this digest, as authentication needs it. */
export interface LiveApiKey {
  id: string;
  account_id: string;
  key_hash: string;
}

/** The look-ups every transfer request makes, each remembered in its own HotRows. */
export class HotLookups implements ReadModelFollower {
  private readonly keys = new HotRows<LiveApiKey>();
  private readonly senders = new HotRows<AgentRow>();
  private readonly recipients = new HotRows<AgentWithAccount[]>();
  private readonly webhooks = new HotRows<{ any: boolean }>();
  private readonly all = [this.keys, this.senders, this.recipients, this.webhooks];

  constructor(
    private readonly db: Knex,
    private readonly people: PersonalData,
  ) {}

  liveApiKey(digest: string): Promise<LiveApiKey | undefined> {
    return this.keys.get(digest, () =>
      this.db("api_keys").where({ key_hash: digest }).whereNull("revoked_at").first<LiveApiKey | undefined>(),
    );
  }

  connectedAgent(accountId: string, slug: string): Promise<AgentRow | undefined> {
    return this.senders.get(`${accountId}\n${slug}`, () =>
      findConnectedAgentBySlug(this.db, accountId, slug),
    );
  }

  /** visibleAgents for an account's agent (not a person: whose peers follow transfers). */
  async visibleAgents(accountId: string, ref: string): Promise<AgentWithAccount[]> {
    const found = await this.recipients.get(`${accountId}\n${ref}`, async () => {
      const agents = await visibleAgents(this.db, this.people, accountId, ref);
      return agents.length > 0 ? agents : undefined;
    });
    return found ?? [];
  }

  /**
   * Whether any agent has a live webhook, asked by the webhook reactor for every batch: on a
   * service where none has, its batches then read nothing more (an agent's event drops the answer).
   */
  async anyLiveWebhook(): Promise<boolean> {
    const found = await this.webhooks.get("any", async () => ({ any: await anyLiveWebhook(this.db) }));
    return found?.any ?? false;
  }

  /**
   * No agent has a live webhook, as the read models showed when last asked (anyLiveWebhook) and
   * nothing has changed since that could give one a webhook. False when not known.
   */
  knownNoLiveWebhook(): boolean {
    return this.webhooks.held("any")?.any === false;
  }

  following(live: boolean): void {
    for (const rows of this.all) rows.following(live);
  }

  /** The engine applied `batch`: everything goes unless every event in it is unrelated. */
  applied(batch: RecordedEvent[]): void {
    if (batch.some((event) => !UNRELATED.has(categoryOf(event.streamId)))) this.drop();
  }

  drop(): void {
    for (const rows of this.all) rows.drop();
  }
}

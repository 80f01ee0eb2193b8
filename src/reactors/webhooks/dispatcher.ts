import type { Knex } from "knex";
import { afterAttempt, failedTooLong, type WebhookAttempt } from "../../../domain/webhook.js";
import type { Clock } from "../../clock.js";
import type { CommandDeps } from "../../command-handlers/deps.js";
import { disableWebhook, recordAttempt } from "../../command-handlers/webhooks.js";
import {
  type ClaimedMessage,
  claimDue,
  nextDueAt,
  noteEndpointResult,
  settleAttempt,
} from "../../db/webhook-messages.js";
import type { PersonalData } from "../../privacy/personal-data.js";
import { revealRow } from "../../privacy/reveal.js";
import type { WebhookPolicy } from "../../security/webhook-addresses.js";
import { signatureHeader, type WebhookSecrets } from "../../security/webhook-secrets.js";
import { ATTEMPT_TIMEOUT_MS, type PostResult, postMessage } from "./post.js";

export interface DispatcherDeps {
  db: Knex;
  clock: Clock;
  commands: CommandDeps;
  secrets: WebhookSecrets;
  policy: WebhookPolicy;
  people: PersonalData;
  /** Default ATTEMPT_TIMEOUT_MS. */
  attemptTimeoutMs?: number;
  onError(error: unknown): void;
}

/** Attempts of one agent's endpoint in flight at once: a slow receiver holds only its own. */
export const PER_ENDPOINT = 4;
/** Attempts in flight in this process at once. */
const IN_FLIGHT = 64;
/** How often the queue is looked at when nothing wakes the dispatcher (other instances' messages). */
const POLL_MS = 1000;
/** A claim outlives the longest attempt; an instance that dies frees its messages after this. */
const LEASE_MS = ATTEMPT_TIMEOUT_MS * 6;

/**
 * Works through the delivery queue (decisions 8.3): claims due messages under a lease, sends each
 * signed, records the attempt (an event, then the row) and schedules the next one on the service's
 * clock. Every instance runs one; the leases keep them from attempting a message at once.
 */
export class WebhookDispatcher {
  private readonly inFlight = new Map<string, number>();
  private readonly attempts = new Set<Promise<void>>();
  private running = false;
  private passing: Promise<void> | null = null;
  private again = false;
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly deps: DispatcherDeps) {}

  start(): void {
    this.running = true;
    this.wake();
  }

  async stop(): Promise<void> {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    await this.passing;
    await Promise.all(this.attempts);
  }

  /** Looks at the queue now (new messages, a freed slot, the test clock moved). */
  wake(): void {
    if (!this.running) return;
    if (this.passing) {
      this.again = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.passing = this.pass()
      .catch(this.deps.onError)
      .finally(() => {
        this.passing = null;
        if (this.again) {
          this.again = false;
          this.wake();
        } else this.sleep();
      });
  }

  private async pass(): Promise<void> {
    const now = this.deps.clock.now();
    const total = [...this.inFlight.values()].reduce((a, b) => a + b, 0);
    const claimed = await claimDue(this.deps.db, {
      now,
      leaseUntil: new Date(now.getTime() + LEASE_MS),
      perAgent: PER_ENDPOINT,
      inFlight: this.inFlight,
      limit: IN_FLIGHT - total,
    });
    for (const message of claimed) this.launch(message);
  }

  /** Sleeps until the next message is due, or the poll interval, whichever comes first. */
  private async sleep(): Promise<void> {
    if (!this.running) return;
    let wait = POLL_MS;
    try {
      const due = await nextDueAt(this.deps.db);
      if (due) wait = Math.min(POLL_MS, Math.max(0, due.getTime() - this.deps.clock.now().getTime()));
    } catch (error) {
      this.deps.onError(error);
    }
    if (!this.running || this.passing) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.wake(), wait);
  }

  private launch(message: ClaimedMessage): void {
    this.inFlight.set(message.agent_id, (this.inFlight.get(message.agent_id) ?? 0) + 1);
    let slotFreed = false;
    const freeSlot = () => {
      if (slotFreed) return;
      slotFreed = true;
      const left = (this.inFlight.get(message.agent_id) ?? 1) - 1;
      if (left > 0) this.inFlight.set(message.agent_id, left);
      else this.inFlight.delete(message.agent_id);
      this.wake();
    };
    const attempt = this.attempt(message, freeSlot)
      .catch(this.deps.onError)
      .finally(() => {
        freeSlot();
        this.attempts.delete(attempt);
      });
    this.attempts.add(attempt);
  }

  /**
   * The body as sent: personal data opened now (an erased person reads "[erased]"), at the top of
   * the data and one object down (a request transfer's sender, decisions 10.3).
   */
  private async bodyOf(message: ClaimedMessage): Promise<string> {
    const opened = await openStrings(this.deps.people, message.data);
    const data = Object.fromEntries(
      await Promise.all(
        Object.entries(opened).map(async ([key, value]) => [
          key,
          isRecord(value) ? await openStrings(this.deps.people, value) : value,
        ]),
      ),
    );
    return JSON.stringify({
      type: message.type,
      timestamp: new Date(message.occurred_at).toISOString(),
      data,
    });
  }

  private async send(message: ClaimedMessage, at: Date): Promise<PostResult> {
    const secrets = await this.deps.secrets.signing(message.agent_id, at);
    if (secrets.length === 0)
      return { statusCode: null, durationMs: 0, error: "no signing secret: set the webhook_url again" };
    const body = await this.bodyOf(message);
    const timestamp = Math.floor(at.getTime() / 1000);
    const headers = {
      "content-type": "application/json",
      "user-agent": "Handoff-Webhooks/1",
      "webhook-id": message.message_id,
      "webhook-timestamp": String(timestamp),
      "webhook-signature": signatureHeader(secrets, message.message_id, timestamp, body),
    };
    return postMessage(message.url, headers, body, this.deps.policy, this.deps.attemptTimeoutMs);
  }

  /**
   * Sends one message and records the attempt. `settled` is called once its row is settled: the
   * agent's next message may go from then on (a first attempt waits for the one before it, so
   * that a receiver hears an agent's messages in log order), and what follows (the endpoint's
   * failure streak) need not hold it back.
   */
  private async attempt(message: ClaimedMessage, settled: () => void): Promise<void> {
    const { clock, db, commands } = this.deps;
    const at = clock.now();
    const result = await this.send(message, at);
    const delivered = result.error === null;
    const outcome = afterAttempt(delivered, message.failed_attempts, message.one_more, clock.now());
    const attempt: WebhookAttempt = {
      at: at.toISOString(),
      status_code: result.statusCode,
      duration_ms: result.durationMs,
      error: result.error,
    };
    await recordAttempt(commands, message.account_id, message.agent_id, {
      ...attempt,
      messageId: message.message_id,
      type: message.type,
      attempt: message.attempt_count + 1,
      outcome: outcome.status,
      nextAttemptAt: outcome.nextAttemptAt,
    });
    await settleAttempt(db, message.message_id, attempt, { ...outcome, scheduled: !message.one_more });
    settled();
    const failingSince = await noteEndpointResult(db, message.agent_id, delivered, at);
    if (!delivered && failingSince && failedTooLong(failingSince.toISOString(), at))
      await disableWebhook(commands, message.account_id, message.agent_id, failingSince.toISOString());
  }
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** An object with each of its string fields opened (sealed personal data), the rest as is. */
function openStrings(people: PersonalData, data: Record<string, unknown>): Promise<Record<string, unknown>> {
  const fields = Object.keys(data).filter((key) => typeof data[key] === "string");
  return revealRow(people, data, fields);
}

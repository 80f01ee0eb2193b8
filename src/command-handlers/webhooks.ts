import { randomUUID } from "node:crypto";
import type { Knex } from "knex";
import { type AgentProfile, agentDecider } from "../../domain/agent.js";
import { DomainError } from "../../domain/decider.js";
import { streams } from "../../domain/streams.js";
import type {
  DeliveryStatus,
  WebhookAttempt,
  WebhookEvent,
  WebhookMessageType,
} from "../../domain/webhook.js";
import { forgetFailures, redeliver } from "../db/webhook-messages.js";
import { ANY } from "../eventstore/port.js";
import { digestsEqual } from "../security/secrets.js";
import { checkWebhookUrl, ForbiddenWebhookUrl, type WebhookPolicy } from "../security/webhook-addresses.js";
import type { WebhookSecrets } from "../security/webhook-secrets.js";
import { type AgentRegistration, registerAgent, updateAgent } from "./agents.js";
import type { CommandDeps } from "./deps.js";
import { handle } from "./handle.js";
import { type Actor, SYSTEM_ACTOR } from "./streams.js";

/** The command deps plus the webhooks' sealed secrets and address policy (decisions 8.1). */
export interface WebhookDeps extends CommandDeps {
  webhookSecrets: WebhookSecrets;
  webhookPolicy: WebhookPolicy;
  /** The delivery queue's database. */
  db: Knex;
  /** Tells this instance's dispatcher to look at the queue now. */
  wakeDispatcher(): void;
}

/** The old secret signs beside the new one this long after a rotation. */
const ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000;

/** A URL being set is checked here, before anything is recorded: a refusal is the caller's 400. */
async function checkUrl(deps: WebhookDeps, url: string | null | undefined): Promise<void> {
  if (!url) return;
  try {
    await checkWebhookUrl(url, deps.webhookPolicy);
  } catch (error) {
    if (error instanceof ForbiddenWebhookUrl) throw new DomainError("INVALID", error.message, "webhook_url");
    throw error;
  }
}

/**
 * Registers an agent; with a webhook_url, its first secret comes back (decisions 8.1: shown once).
 * The secret is made after the registration is recorded, so a refused one leaves no row behind.
 */
export async function registerAgentWithWebhook(
  deps: WebhookDeps,
  accountId: string,
  input: AgentRegistration,
  actor: Actor,
) {
  await checkUrl(deps, input.profile.webhookUrl);
  const result = await registerAgent(deps, accountId, input, actor);
  const webhookSecret = input.profile.webhookUrl ? await deps.webhookSecrets.issue(result.agentId) : null;
  return { ...result, webhookSecret };
}

/** Changes a profile; the first webhook_url ever set brings the secret, a later one keeps it. */
export async function updateAgentWithWebhook(
  deps: WebhookDeps,
  accountId: string,
  agentId: string,
  changes: Partial<AgentProfile>,
  actor: Actor,
) {
  await checkUrl(deps, changes.webhookUrl);
  const result = await updateAgent(deps, accountId, agentId, changes, actor);
  if (!changes.webhookUrl) return { ...result, webhookSecret: null };
  await forgetFailures(deps.db, agentId);
  const webhookSecret = await deps.webhookSecrets.issue(agentId);
  return { ...result, webhookSecret };
}

/**
 * Decisions 8.1: a new secret, answered once; the old one keeps signing for 24 hours. The secret
 * is staged before the rotation is recorded and made current after: a crash in between leaves
 * the rotations reactor to make it current (src/reactors/webhooks/rotations.ts), so the secrets
 * always end up as the log says. A decision run again after a conflict stages a new one.
 */
export async function rotateWebhookSecret(
  deps: WebhookDeps,
  accountId: string,
  agentId: string,
  actor: Actor,
) {
  const { position, rotationId, previousValidUntil, webhookSecret } = await handle(
    deps,
    { actor: { ...actor, agentId } },
    async (turn) => {
      const previousValidUntil = new Date(turn.now().getTime() + ROTATION_OVERLAP_MS);
      const rotationId = randomUUID();
      const agent = await turn.load(agentDecider, streams.agent(agentId));
      turn.decide(
        agentDecider,
        agent,
        {
          type: "RotateWebhookSecret",
          accountId,
          now: turn.at(),
          previousValidUntil: previousValidUntil.toISOString(),
          rotationId,
        },
        { digestsEqual },
      );
      const webhookSecret = await deps.webhookSecrets.stage(agentId, rotationId);
      return { rotationId, previousValidUntil, webhookSecret };
    },
  );
  await deps.webhookSecrets.promote(agentId, rotationId, previousValidUntil);
  return { position, webhookSecret };
}

/** `POST /v1/agents/{id}/webhook-test`: recorded, so the reactor turns it into a message. */
export async function requestWebhookTest(
  deps: CommandDeps,
  accountId: string,
  agentId: string,
  actor: Actor,
) {
  const messageId = `msg_${randomUUID().replaceAll("-", "")}`;
  return handle(deps, { actor: { ...actor, agentId } }, async (turn) => {
    const agent = await turn.load(agentDecider, streams.agent(agentId));
    turn.decide(
      agentDecider,
      agent,
      { type: "RequestWebhookTest", accountId, messageId, now: turn.at() },
      { digestsEqual },
    );
    return { messageId };
  });
}

/** Decisions 8.3: the same message again, one more attempt; wakes this instance's dispatcher. */
export async function redeliverMessage(deps: WebhookDeps, agentId: string, messageId: string) {
  const row = await redeliver(deps.db, agentId, messageId, deps.clock.now());
  if (row) deps.wakeDispatcher();
  return row;
}

/** Decisions 8.3: an endpoint failing for 3 days in a row is disabled, by the service itself. */
export async function disableWebhook(
  deps: CommandDeps,
  accountId: string,
  agentId: string,
  failingSince: string,
) {
  const actor: Actor = { ...SYSTEM_ACTOR, accountId, agentId };
  return handle(deps, { actor }, async (turn) => {
    const agent = await turn.load(agentDecider, streams.agent(agentId));
    turn.decide(
      agentDecider,
      agent,
      { type: "DisableWebhook", now: turn.at(), failingSince },
      { digestsEqual },
    );
    return {};
  });
}

/** One attempt as the log keeps it: the agent's history names the message and what came of it. */
export interface AttemptRecord extends WebhookAttempt {
  messageId: string;
  type: WebhookMessageType;
  attempt: number;
  outcome: DeliveryStatus;
  nextAttemptAt: string | null;
}

/**
 * Decisions 8.3: every attempt is an event, on the agent's webhook stream (any version: attempts
 * of one agent run side by side and never conflict; their order is the log's).
 */
export async function recordAttempt(
  deps: CommandDeps,
  accountId: string,
  agentId: string,
  record: AttemptRecord,
) {
  const actor: Actor = { ...SYSTEM_ACTOR, accountId, agentId };
  const { messageId, type, attempt, outcome, nextAttemptAt, at, status_code, duration_ms, error } = record;
  const event: WebhookEvent = {
    type: "WebhookAttempted",
    data: {
      messageId,
      messageType: type,
      attempt,
      at,
      statusCode: status_code,
      durationMs: duration_ms,
      error,
      outcome,
      nextAttemptAt,
    },
  };
  return handle(deps, { actor }, async (turn) => {
    turn.record({ streamId: streams.webhook(agentId), expected: ANY }, [event], actor, at);
    return {};
  });
}

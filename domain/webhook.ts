/**
 * Webhook delivery rules (decisions 8.2–8.3), pure: the message types, the retry schedule and
 * when an endpoint that keeps failing is switched off. Time arrives as an argument.
 */

export const WEBHOOK_MESSAGE_TYPES = [
  "transfer.received",
  "transfer.downloaded",
  "transfer.expired",
  "transfer.receipt",
  "broadcast.published",
  "webhook.test",
] as const;
export type WebhookMessageType = (typeof WEBHOOK_MESSAGE_TYPES)[number];

export type WebhookStatus = "active" | "disabled";
export type DeliveryStatus = "pending" | "delivered" | "failed";

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/** The waits after each failed attempt: after the last one the message has failed. */
export const RETRY_DELAYS_MS = [
  5 * SECOND,
  MINUTE,
  5 * MINUTE,
  30 * MINUTE,
  2 * HOUR,
  6 * HOUR,
  12 * HOUR,
] as const;

/** Failing this long without one delivery in between disables the endpoint. */
export const DISABLE_AFTER_MS = 3 * 24 * HOUR;

/** One attempt as the delivery log shows it. */
export interface WebhookAttempt {
  at: string;
  status_code: number | null;
  duration_ms: number;
  error: string | null;
}

/** What one attempt leaves the message in: delivered, due again at a time, or failed for good. */
export type AttemptOutcome =
  | { status: "delivered"; nextAttemptAt: null }
  | { status: "pending"; nextAttemptAt: string }
  | { status: "failed"; nextAttemptAt: null };

/**
 * The message after an attempt. `failedBefore`: attempts that had failed before this one in the
 * schedule; a redelivery (`oneMore`) is a single extra attempt and never schedules another.
 */
export function afterAttempt(
  delivered: boolean,
  failedBefore: number,
  oneMore: boolean,
  at: Date,
): AttemptOutcome {
  if (delivered) return { status: "delivered", nextAttemptAt: null };
  const delay = oneMore ? undefined : RETRY_DELAYS_MS[failedBefore];
  if (delay === undefined) return { status: "failed", nextAttemptAt: null };
  return { status: "pending", nextAttemptAt: new Date(at.getTime() + delay).toISOString() };
}

/** Whether an endpoint failing since `failingSince` is to be disabled at `now`. */
export function failedTooLong(failingSince: string | null, now: Date): boolean {
  return failingSince !== null && now.getTime() - Date.parse(failingSince) >= DISABLE_AFTER_MS;
}

/** The events of an agent's webhook stream: each attempt, as the history shows it. */
export type WebhookEvent = {
  type: "WebhookAttempted";
  data: {
    messageId: string;
    messageType: WebhookMessageType;
    /** 1 for the first attempt of the message. */
    attempt: number;
    at: string;
    statusCode: number | null;
    durationMs: number;
    error: string | null;
    outcome: DeliveryStatus;
    nextAttemptAt: string | null;
  };
};

import { type HumanEvent, type ReceivingKey, setsNewPassword } from "../domain/human.js";
import type { SessionEvent } from "../domain/session.js";
import { idOf } from "../domain/streams.js";
import { categoryProjection, endedOnErasure, type Projection, sees } from "./projection.js";
import type { Changed, Inserted } from "./rows.js";

/** A person's side of a human account (its address and name are the account's). */
export interface HumanRow {
  account_id: string;
  email_verified: boolean;
  receiving_key: ReceivingKey | null;
}

export interface SessionRow {
  id: string;
  account_id: string;
  expires_at: Date;
  ended_at: Date | null;
}

/** A person's verification and receiving key, by account: read by resolve, sends and sessions. */
export const humansProjection = categoryProjection<HumanEvent>({
  name: "humans",
  tables: ["humans"],
  category: "human",
  async apply(trx, event, accountId) {
    switch (event.type) {
      case "HumanSignedUp":
        await trx("humans").insert({
          account_id: accountId,
          email_verified: false,
          receiving_key: null,
        } satisfies Inserted<HumanRow>);
        return;
      case "EmailVerified":
        await trx("humans")
          .where({ account_id: accountId })
          .update({ email_verified: true } satisfies Changed<HumanRow>);
        return;
      case "ReceivingKeySet": {
        const { publicKey, kdf, keyVersion } = event.data;
        await trx("humans")
          .where({ account_id: accountId })
          .update({
            receiving_key: JSON.stringify({ publicKey, kdf, keyVersion }),
          } satisfies Changed<HumanRow>);
        return;
      }
      default:
        return;
    }
  },
});

/** Open and ended sessions: the authentication hook looks a session token's id up here. */
const sessionLives = categoryProjection<SessionEvent>({
  name: "sessions",
  tables: ["sessions"],
  category: "session",
  async apply(trx, event, sessionId) {
    switch (event.type) {
      case "SessionStarted":
        await trx("sessions").insert({
          id: sessionId,
          account_id: event.data.accountId,
          expires_at: event.data.expiresAt,
          ended_at: null,
        } satisfies Inserted<SessionRow>);
        return;
      case "SessionEnded":
        await trx("sessions")
          .where({ id: sessionId })
          .update({ ended_at: event.data.at } satisfies Changed<SessionRow>);
        return;
      default:
        return;
    }
  },
});

type PasswordEvent = Extract<HumanEvent, { type: "PasswordReset" | "PasswordChanged" }>;

/**
 * A new login password ends the account's sessions: all of them after a reset (whoever had the
 * old password is out), all but the one that asked after a change. The next request with one is 401.
 */
function endedOnNewPassword(inner: Projection): Projection {
  return {
    ...inner,
    sees: (recorded) => setsNewPassword(recorded.type) || sees(inner, recorded),
    async apply(trx, recorded) {
      if (!setsNewPassword(recorded.type)) return inner.apply(trx, recorded);
      const event = { type: recorded.type, data: recorded.data } as PasswordEvent;
      const open = trx("sessions")
        .where({ account_id: idOf(recorded.streamId) })
        .whereNull("ended_at");
      if (event.type === "PasswordChanged") open.whereNot({ id: event.data.keptSessionId });
      await open.update({ ended_at: event.data.at } satisfies Changed<SessionRow>);
    },
  };
}

/** An erased person's sessions end with the erasure: the next request with one is 401. */
export const sessionsProjection = endedOnErasure(endedOnNewPassword(sessionLives), "sessions", "ended_at");

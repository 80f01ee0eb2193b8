import { type Decider, type Decision, refuse, unreachable } from "./decider.js";
import type { PlanLimits } from "./plan-limits.js";
import { storageRefusal } from "./storage-quota.js";

/**
 * An account's quota stream: monthly transfer counts and storage held. Every transfer creation and
 * every release of storage is appended here with an expected version, in the same atomic append as
 * the transfer's own event, so two parallel uploads cannot both take the last slot.
 */
export type UsageEvent =
  | {
      type: "TransferCounted";
      /**
       * `inviteDay`: the UTC day, when the transfer invites a recipient who has no account.
       * `expiresAt`: when the transfer's expiry will release the bytes.
       */
      data: { transferId: string; period: string; bytes: number; inviteDay?: string; expiresAt?: string };
    }
  | { type: "StorageReleased"; data: { transferId: string; bytes: number } };

export type UsageCommand =
  | {
      type: "CountTransfer";
      transferId: string;
      period: string;
      bytes: number;
      inviteDay: string | null;
      expiresAt: string;
    }
  /** `bytes`: what the transfer held, as its own state says. */
  | { type: "ReleaseStorage"; transferId: string; bytes: number };

/**
 * The books of the account as they stand after its latest event: small and of fixed size, however
 * long the history, so that a snapshot of it makes loading cost the same on any account.
 */
export interface UsageState {
  /** The billing period of the latest count (its start date) and the transfers counted in it. */
  period: string | null;
  transfersInPeriod: number;
  /** The UTC day of the latest invitation to a person without an account, and that day's count. */
  inviteDay: string | null;
  invitesOnDay: number;
  /**
   * Declared bytes of live transfers (decisions 3.14): counted at creation, released by the
   * transfer's expiry, deletion or last download with auto_delete, each recorded on this stream in
   * the same append as the transfer's own event. The quota on them: domain/storage-quota.ts.
   */
  bytesHeld: number;
}

export interface UsageContext {
  limits: PlanLimits;
}

function decide(command: UsageCommand, state: UsageState, { limits }: UsageContext): Decision<UsageEvent> {
  switch (command.type) {
    case "CountTransfer": {
      const { transferId, period, bytes, inviteDay, expiresAt } = command;
      const counted = state.period === period ? state.transfersInPeriod : 0;
      if (limits.transfersPerMonth !== null && counted >= limits.transfersPerMonth) {
        return refuse("QUOTA_EXCEEDED", `the plan allows ${limits.transfersPerMonth} transfers per month`);
      }
      const full = storageRefusal(state.bytesHeld, bytes, limits);
      if (full) return full;
      const invited = inviteDay !== null && state.inviteDay === inviteDay ? state.invitesOnDay : 0;
      if (inviteDay !== null && invited >= limits.invitesPerDay) {
        return refuse(
          "INVITE_RATE_LIMIT",
          `at most ${limits.invitesPerDay} transfers a day to people without an account`,
        );
      }
      return [
        {
          type: "TransferCounted",
          data: { transferId, period, bytes, ...(inviteDay ? { inviteDay } : {}), expiresAt },
        },
      ];
    }
    case "ReleaseStorage":
      return [{ type: "StorageReleased", data: { transferId: command.transferId, bytes: command.bytes } }];
    default:
      return unreachable(command);
  }
}

function evolve(state: UsageState, event: UsageEvent): UsageState {
  switch (event.type) {
    case "TransferCounted": {
      const { period, bytes, inviteDay } = event.data;
      return {
        period,
        transfersInPeriod: state.period === period ? state.transfersInPeriod + 1 : 1,
        inviteDay: inviteDay ?? state.inviteDay,
        invitesOnDay: inviteDay
          ? state.inviteDay === inviteDay
            ? state.invitesOnDay + 1
            : 1
          : state.invitesOnDay,
        bytesHeld: state.bytesHeld + bytes,
      };
    }
    case "StorageReleased":
      return { ...state, bytesHeld: state.bytesHeld - event.data.bytes };
    default:
      return unreachable(event);
  }
}

export const usageDecider: Decider<UsageCommand, UsageEvent, UsageState, UsageContext> = {
  initialState: () => ({
    period: null,
    transfersInPeriod: 0,
    inviteDay: null,
    invitesOnDay: 0,
    bytesHeld: 0,
  }),
  evolve,
  decide,
};

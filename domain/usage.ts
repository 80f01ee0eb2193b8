import { type Decider, type Decision, refuse, unreachable } from "./decider.js";
import type { PlanLimits } from "./plan-limits.js";

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
       * `expiresAt`: past it the bytes no longer count, whether or not their release is recorded yet.
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
      now: string;
    }
  | { type: "ReleaseStorage"; transferId: string };

export interface UsageState {
  /** Transfers counted per billing period (its start date). */
  transfersByPeriod: Record<string, number>;
  /** Invitations to people without an account, per UTC day. */
  invitesByDay: Record<string, number>;
  /** Bytes held per live transfer, and until when. */
  held: Record<string, { bytes: number; expiresAt: string | null }>;
}

/** Storage in use at `now` (decisions 3.14): what live transfers hold, expired ones no longer. */
export function storageInUse(state: UsageState, now: string): number {
  return Object.values(state.held)
    .filter((hold) => hold.expiresAt === null || Date.parse(hold.expiresAt) > Date.parse(now))
    .reduce((sum, hold) => sum + hold.bytes, 0);
}

export interface UsageContext {
  limits: PlanLimits;
}

function decide(command: UsageCommand, state: UsageState, { limits }: UsageContext): Decision<UsageEvent> {
  switch (command.type) {
    case "CountTransfer": {
      if (state.held[command.transferId] !== undefined) return [];
      const counted = state.transfersByPeriod[command.period] ?? 0;
      if (limits.transfersPerMonth !== null && counted >= limits.transfersPerMonth) {
        return refuse("QUOTA_EXCEEDED", `the plan allows ${limits.transfersPerMonth} transfers per month`);
      }
      if (
        limits.storageBytes !== null &&
        storageInUse(state, command.now) + command.bytes > limits.storageBytes
      ) {
        return refuse("STORAGE_FULL", `storage is full: the plan allows ${limits.storageBytes} bytes`);
      }
      const { transferId, period, bytes, inviteDay, expiresAt } = command;
      if (inviteDay !== null && (state.invitesByDay[inviteDay] ?? 0) >= limits.invitesPerDay) {
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
    case "ReleaseStorage": {
      const hold = state.held[command.transferId];
      if (hold === undefined) return [];
      return [{ type: "StorageReleased", data: { transferId: command.transferId, bytes: hold.bytes } }];
    }
    default:
      return unreachable(command);
  }
}

function evolve(state: UsageState, event: UsageEvent): UsageState {
  switch (event.type) {
    case "TransferCounted": {
      const { transferId, period, bytes, inviteDay, expiresAt } = event.data;
      return {
        invitesByDay: inviteDay
          ? { ...state.invitesByDay, [inviteDay]: (state.invitesByDay[inviteDay] ?? 0) + 1 }
          : state.invitesByDay,
        transfersByPeriod: {
          ...state.transfersByPeriod,
          [period]: (state.transfersByPeriod[period] ?? 0) + 1,
        },
        held: { ...state.held, [transferId]: { bytes, expiresAt: expiresAt ?? null } },
      };
    }
    case "StorageReleased": {
      const { [event.data.transferId]: _released, ...held } = state.held;
      return { ...state, held };
    }
    default:
      return unreachable(event);
  }
}

export const usageDecider: Decider<UsageCommand, UsageEvent, UsageState, UsageContext> = {
  initialState: () => ({ transfersByPeriod: {}, invitesByDay: {}, held: {} }),
  evolve,
  decide,
};

import { expect } from "vitest";
import { type Decider, DomainError, type DomainErrorCode, fold } from "../../domain/decider.js";
import type { PlanLimits } from "../../domain/plan-limits.js";

/** The context argument: required unless the decider's context may be undefined. */
type ContextArg<Context> = undefined extends Context ? [context?: Context] : [context: Context];

/**
 * Given/when/then for a pure decider: folds `events` into a state, decides `command` on it,
 * then asserts the exact events recorded or the exact code of the refusal.
 */
export function given<Command, Event, State, Context>(
  decider: Decider<Command, Event, State, Context>,
  events: Event[],
  ...[context]: ContextArg<Context>
) {
  return {
    when(command: Command) {
      const decision = decider.decide(command, fold(decider, events), context as Context);
      return {
        // biome-ignore lint/suspicious/noThenProperty: the given/when/then vocabulary; this object is never awaited.
        then(expected: Event[]): void {
          if (decision instanceof DomainError) {
            expect.fail(
              `expected events, but the command was refused: ${decision.code} (${decision.message})`,
            );
          }
          expect(decision).toEqual(expected);
        },
        thenRefused(code: DomainErrorCode): void {
          expect(decision).toBeInstanceOf(DomainError);
          expect((decision as DomainError).code).toBe(code);
        },
      };
    },
  };
}

/** A plan context with no limits but those given (invitations: the spec's 5 a day). */
export function planContext(limits: Partial<PlanLimits> = {}): { limits: PlanLimits } {
  return {
    limits: {
      plan: "test",
      transfersPerMonth: null,
      maxFileSize: null,
      storageBytes: null,
      invitesPerDay: 5,
      maxRetentionSeconds: null,
      maxAgents: null,
      maxConnections: null,
      maxApiKeys: null,
      ...limits,
    },
  };
}

/** The state of an aggregate that exists: fails the test on the empty state. */
export function live<State extends { status: string }>(state: State): Exclude<State, { status: "none" }> {
  expect(state.status).not.toBe("none");
  return state as Exclude<State, { status: "none" }>;
}

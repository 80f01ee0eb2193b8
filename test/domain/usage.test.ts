import { describe, expect, it } from "vitest";
import { DomainError, fold } from "../../domain/decider.js";
import { type UsageEvent, usageDecider } from "../../domain/usage.js";
import { given, planContext } from "./given.js";

const MARCH = "2026-03-15";
const APRIL = "2026-04-15";
const EXPIRES = "2026-03-21T00:00:00.000Z";

const context = planContext;

function counted(transferId: string, period: string, bytes: number): UsageEvent {
  return { type: "TransferCounted", data: { transferId, period, bytes, expiresAt: EXPIRES } };
}
function released(transferId: string, bytes: number): UsageEvent {
  return { type: "StorageReleased", data: { transferId, bytes } };
}
/** `n` transfers of `bytes` each counted in `period`, with ids `<period>-<i>`. */
function many(n: number, period: string, bytes = 0): UsageEvent[] {
  return Array.from({ length: n }, (_, i) => counted(`${period}-${i}`, period, bytes));
}

describe("usage decider", () => {
  describe("CountTransfer", () => {
    it("counts the first transfer of an account with its period and bytes", () => {
      given(usageDecider, [], context({ transfersPerMonth: 50, storageBytes: 1000 }))
        .when({
          type: "CountTransfer",
          transferId: "tr-1",
          period: MARCH,
          bytes: 100,
          inviteDay: null,
          expiresAt: EXPIRES,
        })
        .then([counted("tr-1", MARCH, 100)]);
    });

    it("keeps a count per period and a running total of the storage held", () => {
      const state = fold(usageDecider, [
        ...many(2, MARCH, 10),
        ...many(3, APRIL, 20),
        released(`${MARCH}-0`, 10),
      ]);
      expect(state).toMatchObject({ period: APRIL, transfersInPeriod: 3 });
      expect(state.bytesHeld).toBe(10 + 3 * 20);
    });

    it("allows the last transfer below the monthly limit", () => {
      given(usageDecider, many(2, MARCH), context({ transfersPerMonth: 3 }))
        .when({
          type: "CountTransfer",
          transferId: "tr-x",
          period: MARCH,
          bytes: 0,
          inviteDay: null,
          expiresAt: EXPIRES,
        })
        .then([counted("tr-x", MARCH, 0)]);
    });

    it("refuses a transfer once the monthly limit is reached", () => {
      given(usageDecider, many(3, MARCH), context({ transfersPerMonth: 3 }))
        .when({
          type: "CountTransfer",
          transferId: "tr-x",
          period: MARCH,
          bytes: 0,
          inviteDay: null,
          expiresAt: EXPIRES,
        })
        .thenRefused("QUOTA_EXCEEDED");
    });

    it("refuses every transfer when the plan allows none", () => {
      given(usageDecider, [], context({ transfersPerMonth: 0 }))
        .when({
          type: "CountTransfer",
          transferId: "tr-x",
          period: MARCH,
          bytes: 0,
          inviteDay: null,
          expiresAt: EXPIRES,
        })
        .thenRefused("QUOTA_EXCEEDED");
    });

    it("starts a new period at 0: last period's full count does not carry over", () => {
      given(usageDecider, many(3, MARCH), context({ transfersPerMonth: 3 }))
        .when({
          type: "CountTransfer",
          transferId: "tr-x",
          period: APRIL,
          bytes: 0,
          inviteDay: null,
          expiresAt: EXPIRES,
        })
        .then([counted("tr-x", APRIL, 0)]);
    });

    it("counts each period on its own: a later period's count does not block an earlier one", () => {
      given(usageDecider, [...many(2, MARCH), ...many(3, APRIL)], context({ transfersPerMonth: 3 }))
        .when({
          type: "CountTransfer",
          transferId: "tr-x",
          period: MARCH,
          bytes: 0,
          inviteDay: null,
          expiresAt: EXPIRES,
        })
        .then([counted("tr-x", MARCH, 0)]);
    });

    it("keeps a transfer counted after its storage is released: deletions and expiries do not give slots back", () => {
      const history = [...many(3, MARCH, 5), released(`${MARCH}-0`, 5), released(`${MARCH}-1`, 5)];
      given(usageDecider, history, context({ transfersPerMonth: 3 }))
        .when({
          type: "CountTransfer",
          transferId: "tr-x",
          period: MARCH,
          bytes: 0,
          inviteDay: null,
          expiresAt: EXPIRES,
        })
        .thenRefused("QUOTA_EXCEEDED");
    });

    it("has no monthly limit when the plan's limit is null", () => {
      given(usageDecider, many(200, MARCH), context({ transfersPerMonth: null }))
        .when({
          type: "CountTransfer",
          transferId: "tr-x",
          period: MARCH,
          bytes: 0,
          inviteDay: null,
          expiresAt: EXPIRES,
        })
        .then([counted("tr-x", MARCH, 0)]);
    });

    it("refuses a transfer whose bytes would take the storage past the limit", () => {
      given(usageDecider, [counted("tr-1", MARCH, 900)], context({ storageBytes: 1000 }))
        .when({
          type: "CountTransfer",
          transferId: "tr-2",
          period: MARCH,
          bytes: 101,
          inviteDay: null,
          expiresAt: EXPIRES,
        })
        .thenRefused("STORAGE_FULL");
    });

    it("allows a transfer that fills the storage exactly to the limit", () => {
      given(usageDecider, [counted("tr-1", MARCH, 900)], context({ storageBytes: 1000 }))
        .when({
          type: "CountTransfer",
          transferId: "tr-2",
          period: MARCH,
          bytes: 100,
          inviteDay: null,
          expiresAt: EXPIRES,
        })
        .then([counted("tr-2", MARCH, 100)]);
    });

    it("allows a single transfer exactly the size of the whole storage", () => {
      given(usageDecider, [], context({ storageBytes: 1000 }))
        .when({
          type: "CountTransfer",
          transferId: "tr-1",
          period: MARCH,
          bytes: 1000,
          inviteDay: null,
          expiresAt: EXPIRES,
        })
        .then([counted("tr-1", MARCH, 1000)]);
    });

    it("refuses a single transfer larger than the whole storage", () => {
      given(usageDecider, [], context({ storageBytes: 1000 }))
        .when({
          type: "CountTransfer",
          transferId: "tr-1",
          period: MARCH,
          bytes: 1001,
          inviteDay: null,
          expiresAt: EXPIRES,
        })
        .thenRefused("STORAGE_FULL");
    });

    it("refuses even one more byte when the storage is exactly full", () => {
      given(usageDecider, [counted("tr-1", MARCH, 1000)], context({ storageBytes: 1000 }))
        .when({
          type: "CountTransfer",
          transferId: "tr-2",
          period: MARCH,
          bytes: 1,
          inviteDay: null,
          expiresAt: EXPIRES,
        })
        .thenRefused("STORAGE_FULL");
    });

    it("counts storage across periods: held bytes do not reset with the month", () => {
      given(usageDecider, [counted("tr-1", MARCH, 900)], context({ storageBytes: 1000 }))
        .when({
          type: "CountTransfer",
          transferId: "tr-2",
          period: APRIL,
          bytes: 101,
          inviteDay: null,
          expiresAt: EXPIRES,
        })
        .thenRefused("STORAGE_FULL");
    });

    it("frees room for new transfers once storage is released", () => {
      given(
        usageDecider,
        [counted("tr-1", MARCH, 900), released("tr-1", 900)],
        context({ storageBytes: 1000 }),
      )
        .when({
          type: "CountTransfer",
          transferId: "tr-2",
          period: MARCH,
          bytes: 1000,
          inviteDay: null,
          expiresAt: EXPIRES,
        })
        .then([counted("tr-2", MARCH, 1000)]);
    });

    it("has no storage limit when the plan's limit is null", () => {
      given(usageDecider, [counted("tr-1", MARCH, 10 ** 15)], context({ storageBytes: null }))
        .when({
          type: "CountTransfer",
          transferId: "tr-2",
          period: MARCH,
          bytes: 10 ** 15,
          inviteDay: null,
          expiresAt: EXPIRES,
        })
        .then([counted("tr-2", MARCH, 10 ** 15)]);
    });

    it("reports the monthly limit first when both limits are exceeded", () => {
      given(
        usageDecider,
        [counted("tr-1", MARCH, 1000)],
        context({ transfersPerMonth: 1, storageBytes: 1000 }),
      )
        .when({
          type: "CountTransfer",
          transferId: "tr-2",
          period: MARCH,
          bytes: 1,
          inviteDay: null,
          expiresAt: EXPIRES,
        })
        .thenRefused("QUOTA_EXCEEDED");
    });

    it("names the limit in the refusal message", () => {
      const state = fold(usageDecider, many(3, MARCH));
      const decision = usageDecider.decide(
        {
          type: "CountTransfer",
          transferId: "tr-x",
          period: MARCH,
          bytes: 0,
          inviteDay: null,
          expiresAt: EXPIRES,
        },
        state,
        context({ transfersPerMonth: 3 }),
      );
      expect(decision).toBeInstanceOf(DomainError);
      expect((decision as DomainError).message).toContain("3");
    });
  });

  describe("ReleaseStorage", () => {
    it("releases the bytes the transfer holds, as the transfer says", () => {
      given(usageDecider, [counted("tr-1", MARCH, 700), counted("tr-2", MARCH, 300)], context())
        .when({ type: "ReleaseStorage", transferId: "tr-1", bytes: 700 })
        .then([released("tr-1", 700)]);
    });

    it("takes the released bytes off the storage held, and only those", () => {
      const history = [counted("tr-1", MARCH, 700), counted("tr-2", MARCH, 300), released("tr-1", 700)];
      expect(fold(usageDecider, history).bytesHeld).toBe(300);
    });

    it("releases a transfer that holds zero bytes", () => {
      given(usageDecider, [counted("tr-1", MARCH, 0)], context())
        .when({ type: "ReleaseStorage", transferId: "tr-1", bytes: 0 })
        .then([released("tr-1", 0)]);
    });

    it("releases whatever the plan's limits, even when the account is over them", () => {
      given(
        usageDecider,
        [counted("tr-1", MARCH, 700), counted("tr-2", MARCH, 700)],
        context({ transfersPerMonth: 0, storageBytes: 0 }),
      )
        .when({ type: "ReleaseStorage", transferId: "tr-2", bytes: 700 })
        .then([released("tr-2", 700)]);
    });
  });

  describe("state", () => {
    it("stays the same small size however many transfers the account has had", () => {
      const history = [...many(5000, MARCH, 3), ...many(5000, APRIL, 2)];
      const state = fold(usageDecider, history);
      expect(state).toEqual({
        period: APRIL,
        transfersInPeriod: 5000,
        inviteDay: null,
        invitesOnDay: 0,
        bytesHeld: 5000 * 3 + 5000 * 2,
      });
    });

    it("counts invitations per UTC day, starting again on a new day", () => {
      const invite = (id: string, inviteDay: string): UsageEvent => ({
        type: "TransferCounted",
        data: { transferId: id, period: MARCH, bytes: 0, inviteDay, expiresAt: EXPIRES },
      });
      const state = fold(usageDecider, [
        invite("a", "2026-03-20"),
        invite("b", "2026-03-20"),
        invite("c", "2026-03-21"),
      ]);
      expect(state).toMatchObject({ inviteDay: "2026-03-21", invitesOnDay: 1 });
    });
  });
});

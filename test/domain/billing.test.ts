import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { billingPeriodStart } from "../../domain/billing.js";

/** Each case: the time `now`, and the billing period start expected for it. */
function expectPeriods(accountCreatedAt: string, cases: [now: string, start: string][]) {
  for (const [now, start] of cases) {
    expect(billingPeriodStart(accountCreatedAt, now), `at ${now}`).toBe(start);
  }
}

describe("billingPeriodStart", () => {
  describe("an account created on the 15th", () => {
    const CREATED = "2025-06-15T10:00:00.000Z";

    it("before the billing day: the period started on the 15th of the previous month", () => {
      expectPeriods(CREATED, [
        ["2026-03-01T00:00:00.000Z", "2026-02-15"],
        ["2026-03-14T23:59:59.999Z", "2026-02-15"],
      ]);
    });

    it("on the billing day: a new period started at midnight UTC, whatever the time of creation", () => {
      expectPeriods(CREATED, [
        ["2026-03-15T00:00:00.000Z", "2026-03-15"],
        ["2026-03-15T09:59:59.999Z", "2026-03-15"],
        ["2026-03-15T23:59:59.999Z", "2026-03-15"],
      ]);
    });

    it("after the billing day: the period started on the 15th of this month", () => {
      expectPeriods(CREATED, [
        ["2026-03-16T00:00:00.000Z", "2026-03-15"],
        ["2026-03-31T23:59:59.999Z", "2026-03-15"],
      ]);
    });

    it("is the same in short months, where the 15th always exists", () => {
      expectPeriods(CREATED, [
        ["2026-02-14T12:00:00.000Z", "2026-01-15"],
        ["2026-02-15T12:00:00.000Z", "2026-02-15"],
        ["2026-02-28T12:00:00.000Z", "2026-02-15"],
      ]);
    });

    it("starts the very first period on the creation day itself", () => {
      expectPeriods(CREATED, [
        ["2025-06-15T10:00:00.000Z", "2025-06-15"],
        ["2025-07-14T23:59:59.999Z", "2025-06-15"],
        ["2025-07-15T00:00:00.000Z", "2025-07-15"],
      ]);
    });
  });

  describe("an account created on the 31st", () => {
    const CREATED = "2025-01-31T12:00:00.000Z";

    it("in February of a common year, the period starts on the 28th", () => {
      expectPeriods(CREATED, [
        ["2026-02-27T23:59:59.999Z", "2026-01-31"],
        ["2026-02-28T00:00:00.000Z", "2026-02-28"],
        ["2026-03-01T00:00:00.000Z", "2026-02-28"],
        ["2026-03-30T23:59:59.999Z", "2026-02-28"],
        ["2026-03-31T00:00:00.000Z", "2026-03-31"],
      ]);
    });

    it("in February of a leap year, the period starts on the 29th", () => {
      expectPeriods(CREATED, [
        ["2028-02-28T23:59:59.999Z", "2028-01-31"],
        ["2028-02-29T00:00:00.000Z", "2028-02-29"],
        ["2028-03-01T00:00:00.000Z", "2028-02-29"],
        ["2028-03-31T00:00:00.000Z", "2028-03-31"],
      ]);
    });

    it("in 30-day months, the period starts on the 30th", () => {
      expectPeriods(CREATED, [
        ["2026-04-29T23:59:59.999Z", "2026-03-31"],
        ["2026-04-30T00:00:00.000Z", "2026-04-30"],
        ["2026-05-01T00:00:00.000Z", "2026-04-30"],
        ["2026-05-30T23:59:59.999Z", "2026-04-30"],
        ["2026-05-31T00:00:00.000Z", "2026-05-31"],
        ["2026-09-30T00:00:00.000Z", "2026-09-30"],
        ["2026-11-30T00:00:00.000Z", "2026-11-30"],
      ]);
    });

    it("in 31-day months, the period starts on the 31st", () => {
      expectPeriods(CREATED, [
        ["2026-07-30T23:59:59.999Z", "2026-06-30"],
        ["2026-07-31T00:00:00.000Z", "2026-07-31"],
        ["2026-08-01T00:00:00.000Z", "2026-07-31"],
      ]);
    });
  });

  describe("an account created on the 29th or 30th", () => {
    it("a 30th falls on the last day of February", () => {
      expectPeriods("2025-04-30T00:00:00.000Z", [
        ["2026-02-27T00:00:00.000Z", "2026-01-30"],
        ["2026-02-28T00:00:00.000Z", "2026-02-28"],
        ["2026-03-29T00:00:00.000Z", "2026-02-28"],
        ["2026-03-30T00:00:00.000Z", "2026-03-30"],
      ]);
    });

    it("a leap day falls on 28 February in common years and 29 February in leap years", () => {
      expectPeriods("2024-02-29T08:00:00.000Z", [
        ["2025-02-28T00:00:00.000Z", "2025-02-28"],
        ["2025-03-28T00:00:00.000Z", "2025-02-28"],
        ["2025-03-29T00:00:00.000Z", "2025-03-29"],
        ["2028-02-28T00:00:00.000Z", "2028-01-29"],
        ["2028-02-29T00:00:00.000Z", "2028-02-29"],
      ]);
    });
  });

  describe("across the year boundary", () => {
    it("in January before the billing day, the period started in December of the previous year", () => {
      expectPeriods("2025-06-15T10:00:00.000Z", [
        ["2027-01-01T00:00:00.000Z", "2026-12-15"],
        ["2027-01-14T23:59:59.999Z", "2026-12-15"],
        ["2027-01-15T00:00:00.000Z", "2027-01-15"],
      ]);
    });

    it("in late December, the period started in December of the same year", () => {
      expectPeriods("2025-06-15T10:00:00.000Z", [["2026-12-31T23:59:59.999Z", "2026-12-15"]]);
    });

    it("with a billing day of the 31st, early January belongs to the period of 31 December", () => {
      expectPeriods("2025-01-31T12:00:00.000Z", [
        ["2027-01-05T00:00:00.000Z", "2026-12-31"],
        ["2027-01-31T00:00:00.000Z", "2027-01-31"],
      ]);
    });

    it("with a billing day of the 1st, the new year starts a new period at midnight UTC", () => {
      expectPeriods("2025-03-01T00:00:00.000Z", [
        ["2026-12-31T23:59:59.999Z", "2026-12-01"],
        ["2027-01-01T00:00:00.000Z", "2027-01-01"],
      ]);
    });
  });

  it("takes both the billing day and the current day in UTC, whatever offset the times carry", () => {
    // Created 2025-06-16T01:30Z: billing day 16. Now is 2026-03-15T23:00Z: still the February period.
    expectPeriods("2025-06-15T23:30:00-02:00", [
      ["2026-03-16T00:00:00+01:00", "2026-02-16"],
      ["2026-03-16T01:00:00+01:00", "2026-03-16"],
    ]);
  });

  it("for any creation and time: the period contains now, starts on the billing day or the month's last day, and the instant before its start is in the previous period", () => {
    const day = 24 * 60 * 60 * 1000;
    const FROM = Date.parse("2020-01-01T00:00:00.000Z");
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 3000 * day }),
        fc.integer({ min: 0, max: 3000 * day }),
        (createdOffset, elapsed) => {
          const created = new Date(FROM + createdOffset);
          const now = new Date(FROM + createdOffset + elapsed);
          const start = billingPeriodStart(created.toISOString(), now.toISOString());
          const startMs = Date.parse(`${start}T00:00:00.000Z`);
          expect(startMs).toBeLessThanOrEqual(now.getTime());
          expect(now.getTime() - startMs).toBeLessThan(31 * day);
          const startDay = new Date(startMs).getUTCDate();
          const lastDay = new Date(
            Date.UTC(new Date(startMs).getUTCFullYear(), new Date(startMs).getUTCMonth() + 1, 0),
          ).getUTCDate();
          expect(startDay).toBe(Math.min(created.getUTCDate(), lastDay));
          expect(billingPeriodStart(created.toISOString(), new Date(startMs).toISOString())).toBe(start);
          expect(billingPeriodStart(created.toISOString(), new Date(startMs - 1).toISOString()) < start).toBe(
            true,
          );
        },
      ),
      { numRuns: 1000 },
    );
  });
});

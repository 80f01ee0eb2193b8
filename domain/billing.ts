/**
 * The start of the billing period that contains `now`: monthly counts reset on the account's
 * billing day, the day of month it was created (decisions 3.14). A billing day past the end of a
 * short month falls on that month's last day. All in UTC.
 */
export function billingPeriodStart(accountCreatedAt: string, now: string): string {
  const billingDay = new Date(accountCreatedAt).getUTCDate();
  const at = new Date(now);
  const dayIn = (year: number, month: number) =>
    Math.min(billingDay, new Date(Date.UTC(year, month + 1, 0)).getUTCDate());
  let year = at.getUTCFullYear();
  let month = at.getUTCMonth();
  if (at.getUTCDate() < dayIn(year, month)) {
    month -= 1;
    if (month < 0) {
      month = 11;
      year -= 1;
    }
  }
  return new Date(Date.UTC(year, month, dayIn(year, month))).toISOString().slice(0, 10);
}

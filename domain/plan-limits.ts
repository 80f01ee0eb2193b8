/** A plan's limits; null means unlimited. */
export interface PlanLimits {
  transfersPerMonth: number | null;
  maxFileSize: number | null;
  storageBytes: number | null;
  maxRetentionSeconds: number | null;
  maxAgents: number | null;
  maxConnections: number | null;
  maxApiKeys: number | null;
  /** Transfers a day to people without an account (spec section 8: 5). */
  invitesPerDay: number;
}

export function withinLimit(current: number, limit: number | null): boolean {
  return limit === null || current < limit;
}

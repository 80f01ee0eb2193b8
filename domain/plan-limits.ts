/** A plan's limits; null means unlimited. */
export interface PlanLimits {
  transfersPerMonth: number | null;
  maxFileSize: number | null;
  storageBytes: number | null;
  maxRetentionSeconds: number | null;
  maxAgents: number | null;
  maxConnections: number | null;
  maxApiKeys: number | null;
}

export function withinLimit(current: number, limit: number | null): boolean {
  return limit === null || current < limit;
}

/** A plan's limits; null means unlimited. */
export interface PlanLimits {
  /** The plan's id (free, builder, …), for messages that name it. */
  plan: string;
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

const MiB = 1024 * 1024;

/** 52428800 → "50 MB" (decisions 3.4: 1 MB = 1,048,576 bytes, 1 GB = 1024 MB). */
function planSize(bytes: number): string {
  if (bytes % (1024 * MiB) === 0) return `${bytes / (1024 * MiB)} GB`;
  if (bytes % MiB === 0) return `${bytes / MiB} MB`;
  return `${bytes} bytes`;
}

/** FILE_TOO_LARGE: the plan, its limit, and the way out (another plan). */
export function overMaxFileSize(fileName: string, limits: PlanLimits & { maxFileSize: number }): string {
  return (
    `'${fileName}' is over the ${limits.plan} plan's maximum file size of ${planSize(limits.maxFileSize)} ` +
    `(${limits.maxFileSize} bytes); larger plans take larger files: the operator changes the account's plan ` +
    "with `handoff accounts plan --email ADDRESS --plan PLAN` (README: Plans and limits)"
  );
}

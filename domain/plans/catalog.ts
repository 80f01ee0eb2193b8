import type { PlanLimits } from "../plan-limits.js";
import plans from "./plans.json" with { type: "json" };

/** Plans are data (plans.json), not code: spec section 8 with decisions 3.4 (null = unlimited). */
const catalog: Record<string, PlanLimits> = Object.fromEntries(
  Object.entries(plans).map(([plan, limits]) => [plan, { plan, ...limits }]),
);

export const PLAN_IDS = Object.keys(catalog) as [string, ...string[]];
export const DEFAULT_PLAN = "free";

export function limitsOf(plan: string): PlanLimits {
  const limits = catalog[plan];
  if (!limits) throw new Error(`unknown plan ${plan}`);
  return limits;
}

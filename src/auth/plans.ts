/** The plans of docs/contract.md §5. Keyless callers get the free numbers, counted per client address. */
export type PlanName = 'free' | 'pro';

export interface PlanLimits {
  per_minute: number;
  per_day: number;
  short_links_per_day: number;
}

export const PLANS: Readonly<Record<PlanName | 'keyless', Readonly<PlanLimits>>> = {
  keyless: { per_minute: 10, per_day: 100, short_links_per_day: 100 },
  free: { per_minute: 10, per_day: 100, short_links_per_day: 100 },
  pro: { per_minute: 60, per_day: 5000, short_links_per_day: 1000 },
};

export const PLAN_NAMES: readonly PlanName[] = ['free', 'pro'];

export function isPlanName(s: string): s is PlanName {
  return (PLAN_NAMES as readonly string[]).includes(s);
}

/** Registration: at most this many per client address per hour. */
export const REGISTER_LIMIT = { limit: 5, windowMs: 60 * 60 * 1000 };

/** The public `limits` object of register and info (docs/contract.md §3 Auth). */
export function publicLimits(plan: PlanName | 'keyless'): { per_minute: number; per_day: number } {
  const p = PLANS[plan];
  return { per_minute: p.per_minute, per_day: p.per_day };
}

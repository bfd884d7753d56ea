/**
 * The plans of docs/contract.md §5. The figures are configuration (PLAN_KEYLESS, PLAN_FREE,
 * PLAN_PRO, read by src/config.ts); these are the defaults. A key raises limits: keyless callers
 * (counted per client address) get less than a free key.
 */
export type PlanName = 'free' | 'pro';

export interface PlanLimits {
  per_minute: number;
  per_day: number;
  short_links_per_day: number;
}

export type PlanTable = Readonly<Record<PlanName | 'keyless', Readonly<PlanLimits>>>;

export const DEFAULT_PLANS: PlanTable = {
  keyless: { per_minute: 5, per_day: 50, short_links_per_day: 20 },
  free: { per_minute: 10, per_day: 100, short_links_per_day: 100 },
  pro: { per_minute: 60, per_day: 5000, short_links_per_day: 1000 },
};

/** `per_minute/per_day/short_links_per_day`, as the PLAN_* variables spell a plan. */
export function formatPlan(p: PlanLimits): string {
  return `${p.per_minute}/${p.per_day}/${p.short_links_per_day}`;
}

/** Parses `10/100/100`; null when it is not three whole numbers ≥ 1. */
export function parsePlan(text: string): PlanLimits | null {
  const m = /^\s*(\d{1,9})\s*\/\s*(\d{1,9})\s*\/\s*(\d{1,9})\s*$/.exec(text);
  if (!m) return null;
  const [perMinute, perDay, links] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (perMinute < 1 || perDay < 1 || links < 1) return null;
  return { per_minute: perMinute, per_day: perDay, short_links_per_day: links };
}

export const PLAN_NAMES = ['free', 'pro'] as const satisfies readonly PlanName[];

export function isPlanName(s: string): s is PlanName {
  return (PLAN_NAMES as readonly string[]).includes(s);
}

/** Registration: at most this many per client address per hour. */
export const REGISTER_LIMIT = { limit: 5, windowMs: 60 * 60 * 1000 };

/** The public `limits` object of register and info (docs/contract.md §3 Auth). */
export function publicLimits(plans: PlanTable, plan: PlanName | 'keyless'): { per_minute: number; per_day: number } {
  const p = plans[plan];
  return { per_minute: p.per_minute, per_day: p.per_day };
}

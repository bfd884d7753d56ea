/** When a task runs, as given to create or update: a cron schedule or a one-shot run_at, checked. */
import { nextFire } from '../../lib/cron.js';

/** The plan fields of a record: exactly one of schedule and run_at is set. */
export interface Plan {
  schedule: string | null;
  run_at: string | null;
}

/** Whitespace-normalised schedule; throws PARSE_ERROR (422) when it does not parse or never fires. */
export function checkedSchedule(raw: string, zone: string, now: number): string {
  const schedule = raw.trim().split(/\s+/).join(' ');
  nextFire(schedule, zone, now);
  return schedule;
}

/**
 * The plan of a create (the input rules guarantee exactly one of the two). run_at is stored in
 * UTC with milliseconds, the form every stored time has, so times compare as strings.
 */
export function planInput(input: { schedule?: string | undefined; run_at?: string | undefined; timezone: string }, now: number): Plan {
  if (input.run_at !== undefined) return { schedule: null, run_at: new Date(input.run_at).toISOString() };
  return { schedule: checkedSchedule(input.schedule ?? '', input.timezone, now), run_at: null };
}

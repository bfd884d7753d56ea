/** Ready-made schedules an agent can pass straight to cron_task_create (template_id is ignored there). */
export interface TaskTemplate {
  template_id: string;
  name: string;
  schedule: string;
  description: string;
  tags: string[];
}

export const TEMPLATES: readonly TaskTemplate[] = [
  { template_id: 'daily-morning', name: 'Daily morning', schedule: '0 9 * * *', description: 'Every day at 09:00', tags: ['daily'] },
  { template_id: 'daily-evening', name: 'Daily evening', schedule: '0 18 * * *', description: 'Every day at 18:00', tags: ['daily'] },
  { template_id: 'daily-midnight', name: 'Daily at midnight', schedule: '0 0 * * *', description: 'Every day at 00:00', tags: ['daily'] },
  { template_id: 'hourly', name: 'Hourly', schedule: '0 * * * *', description: 'At minute 0 of every hour', tags: ['frequent'] },
  { template_id: 'every-5min', name: 'Every 5 minutes', schedule: '*/5 * * * *', description: 'Every 5 minutes', tags: ['frequent'] },
  { template_id: 'every-15min', name: 'Every 15 minutes', schedule: '*/15 * * * *', description: 'Every 15 minutes', tags: ['frequent'] },
  { template_id: 'every-30min', name: 'Every 30 minutes', schedule: '*/30 * * * *', description: 'Every 30 minutes', tags: ['frequent'] },
  { template_id: 'every-6h', name: 'Every 6 hours', schedule: '0 */6 * * *', description: 'At 00:00, 06:00, 12:00 and 18:00', tags: ['frequent'] },
  { template_id: 'weekday-morning', name: 'Weekday morning', schedule: '0 9 * * 1-5', description: 'Monday to Friday at 09:00', tags: ['weekdays'] },
  { template_id: 'weekday-evening', name: 'Weekday evening', schedule: '0 18 * * 1-5', description: 'Monday to Friday at 18:00', tags: ['weekdays'] },
  { template_id: 'weekend-morning', name: 'Weekend morning', schedule: '0 10 * * 0,6', description: 'Saturday and Sunday at 10:00', tags: ['weekend'] },
  { template_id: 'weekly', name: 'Weekly', schedule: '0 9 * * 1', description: 'Every Monday at 09:00', tags: ['weekly'] },
  { template_id: 'weekly-friday-review', name: 'Friday afternoon review', schedule: '0 16 * * 5', description: 'Every Friday at 16:00', tags: ['weekly'] },
  { template_id: 'monthly', name: 'Monthly', schedule: '0 9 1 * *', description: 'On the 1st of every month at 09:00', tags: ['monthly'] },
  { template_id: 'quarterly', name: 'Quarterly', schedule: '0 9 1 1,4,7,10 *', description: 'On the 1st of January, April, July and October at 09:00', tags: ['quarterly'] },
  { template_id: 'yearly', name: 'Yearly', schedule: '0 9 1 1 *', description: 'On 1 January at 09:00', tags: ['yearly'] },
];

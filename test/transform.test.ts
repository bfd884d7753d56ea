// Issue 35: file_process action "transform". Expected outputs are worked out by hand, the way
// csvkit (csvcut, csvgrep, csvsort) and Miller (sort -nr, head, uniq, stats1 -a count,sum,mean
// -g) would print them for these small fixtures — never taken from the tool's own output. Then
// the hostile cases: 10^5 groups, a deep sort, and n-versus-4n CPU growth for sort and group.
import { describe, expect, it } from 'vitest';
import type { AnyTool } from '../src/registry.js';
import { fileProcess } from '../src/tools/files/file-process.js';
import { MAX_STEPS } from '../src/tools/files/transform.js';
import { growth, GROWTH_TIMEOUT_MS, MAX_GROWTH } from './growth.js';
import { useToolHarness } from './harness.js';

const h = useToolHarness();
const tool = fileProcess as unknown as AnyTool;
const transform = (content: string, steps: unknown[], extra: Record<string, unknown> = {}) => h.call(tool, { action: 'transform', content, steps, ...extra });
const csvOut = async (content: string, steps: unknown[], extra: Record<string, unknown> = {}) => (await transform(content, steps, extra)).content as string;
const lines = (...rows: string[]) => rows.map((r) => `${r}\r\n`).join('');

const STAFF = [
  'name,dept,salary,start,code',
  'Ada,eng,120,2020-01-05,007',
  'Bob,ops,80,2019-03-01,10',
  'Cy,eng,100,2021-07-12,9',
  'Dee,ops,,2018-11-30,',
  'Eve,eng,120,2020-01-05,0100',
  'Fay,Sales,95.5,2022-02-02,file10',
  'Gus,sales,,2017-06-15,file2',
].join('\n') + '\n';

describe('transform: one step at a time (csvkit / Miller equivalents)', () => {
  it('select keeps, reorders and renames columns (csvcut -c salary,name + rename)', async () => {
    const r = await transform(STAFF, [{ op: 'select', columns: [{ column: 'salary', as: 'pay' }, 'name'] }, { op: 'limit', count: 3 }]);
    expect(r).toStrictEqual({ action: 'transform', from: 'csv', to: 'csv', columns: ['pay', 'name'], content: lines('pay,name', '120,Ada', '80,Bob', '100,Cy'), rowCount: 3 });
  });

  it('filter with each operator (csvgrep; numbers numerically, text naturally, null only for is_null and the negations)', async () => {
    const names = async (filter: Record<string, unknown>) => {
      const r = await transform(STAFF, [{ op: 'filter', ...filter }, { op: 'select', columns: ['name'] }], { to: 'json' });
      return (JSON.parse(r.content as string) as Array<{ name: string }>).map((x) => x.name).join(' ');
    };
    expect(await names({ column: 'salary', operator: 'eq', value: 120 })).toBe('Ada Eve');
    expect(await names({ column: 'salary', operator: 'eq', value: '120' })).toBe('Ada Eve');
    expect(await names({ column: 'salary', operator: 'ne', value: 120 })).toBe('Bob Cy Dee Fay Gus');
    expect(await names({ column: 'salary', operator: 'gt', value: 95.5 })).toBe('Ada Cy Eve');
    expect(await names({ column: 'salary', operator: 'ge', value: 95.5 })).toBe('Ada Cy Eve Fay');
    expect(await names({ column: 'salary', operator: 'lt', value: 100 })).toBe('Bob Fay');
    expect(await names({ column: 'salary', operator: 'le', value: '100' })).toBe('Bob Cy Fay');
    expect(await names({ column: 'salary', operator: 'is_null' })).toBe('Dee Gus');
    expect(await names({ column: 'salary', operator: 'not_null' })).toBe('Ada Bob Cy Eve Fay');
    expect(await names({ column: 'dept', operator: 'in', value: ['ops', 'sales'] })).toBe('Bob Dee Gus');
    expect(await names({ column: 'dept', operator: 'in', value: ['ops', 'sales'], ignore_case: true })).toBe('Bob Dee Fay Gus');
    expect(await names({ column: 'dept', operator: 'not_in', value: ['eng'] })).toBe('Bob Dee Fay Gus');
    expect(await names({ column: 'dept', operator: 'eq', value: 'SALES', ignore_case: true })).toBe('Fay Gus');
    expect(await names({ column: 'start', operator: 'starts_with', value: '2020' })).toBe('Ada Eve');
    expect(await names({ column: 'start', operator: 'lt', value: '2019-06-01' })).toBe('Bob Dee Gus');
    expect(await names({ column: 'name', operator: 'ends_with', value: 'e' })).toBe('Dee Eve');
    expect(await names({ column: 'name', operator: 'contains', value: 'A', ignore_case: true })).toBe('Ada Fay');
    expect(await names({ column: 'name', operator: 'not_contains', value: 'a' })).toBe('Bob Cy Dee Eve Gus');
    // code holds 007, 10, 9, null, 0100, file10, file2: numeric text compares as numbers, and only numbers with numbers.
    expect(await names({ column: 'code', operator: 'lt', value: 10 })).toBe('Ada Cy');
    expect(await names({ column: 'code', operator: 'eq', value: 7 })).toBe('Ada');
    expect(await names({ column: 'code', operator: 'gt', value: 'file9' })).toBe('Fay');
  });

  it('sort: several keys, stable, natural order, nulls last both ways (csvsort / mlr sort -nr)', async () => {
    const sorted = async (keys: unknown[]) => (await csvOut(STAFF, [{ op: 'sort', keys }, { op: 'select', columns: ['name'] }])).split('\r\n').slice(1, -1).join(' ');
    expect(await sorted([{ column: 'salary', direction: 'desc' }])).toBe('Ada Eve Cy Fay Bob Dee Gus');
    expect(await sorted([{ column: 'salary' }])).toBe('Bob Fay Cy Ada Eve Dee Gus');
    expect(await sorted([{ column: 'dept' }, { column: 'salary', direction: 'desc' }, { column: 'name', direction: 'desc' }])).toBe('Fay Eve Ada Cy Bob Dee Gus');
    // 007 → 7, 9, 10, 0100 → 100, then text: file2 before file10; null last.
    expect(await sorted([{ column: 'code' }])).toBe('Ada Cy Bob Eve Gus Fay Dee');
    expect(await sorted([{ column: 'code', direction: 'desc' }])).toBe('Fay Gus Eve Bob Cy Ada Dee');
  });

  it('dedupe keeps the first row per key (mlr head -n 1 -g), or per whole row; 1 and "1" differ', async () => {
    expect(await csvOut(STAFF, [{ op: 'dedupe', keys: ['salary', 'start'] }, { op: 'select', columns: ['name'] }])).toBe(lines('name', 'Ada', 'Bob', 'Cy', 'Dee', 'Fay', 'Gus'));
    expect(await csvOut(lines('a,b', '1,x', '1,x', '1,y', '1,x'), [{ op: 'dedupe' }])).toBe(lines('a,b', '1,x', '1,y'));
    const json = JSON.stringify([{ v: 1 }, { v: '1' }, { v: 1 }, { v: null }, {}]);
    expect((await transform(json, [{ op: 'dedupe' }])).rowCount).toBe(3);
  });

  it('group: count, sum, mean, min, max per group in first-seen order (mlr stats1 -a count,sum,mean,min,max -f salary -g dept)', async () => {
    const r = await transform(STAFF, [
      { op: 'group', keys: ['dept'], aggregates: [{ op: 'count' }, { op: 'count', column: 'salary' }, { op: 'sum', column: 'salary' }, { op: 'mean', column: 'salary' }, { op: 'min', column: 'start' }, { op: 'max', column: 'salary', as: 'top' }] },
    ]);
    expect(r.columns).toStrictEqual(['dept', 'count', 'salary_count', 'salary_sum', 'salary_mean', 'start_min', 'top']);
    // eng: 120 + 100 + 120 = 340 over 3; ops: 80 over 1 (Dee has none); Sales 95.5; sales: nothing to sum.
    expect(r.content).toBe(
      lines(
        'dept,count,salary_count,salary_sum,salary_mean,start_min,top',
        'eng,3,3,340,113.33333333333333,2020-01-05,120',
        'ops,2,1,80,80,2018-11-30,80',
        'Sales,1,1,95.5,95.5,2022-02-02,95.5',
        'sales,1,0,,,2017-06-15,',
      ),
    );
    const all = await transform(STAFF, [{ op: 'group', aggregates: [{ op: 'count' }, { op: 'sum', column: 'salary', as: 'total' }] }], { to: 'json' });
    expect(JSON.parse(all.content as string)).toStrictEqual([{ count: 7, total: 515.5 }]);
  });

  it('group sums decimals without drift (0.1 × 10 is 1)', async () => {
    const r = await transform('v\n' + '0.1\n'.repeat(10), [{ op: 'group', aggregates: [{ op: 'sum', column: 'v' }] }], { to: 'json' });
    expect(JSON.parse(r.content as string)).toStrictEqual([{ v_sum: 1 }]);
  });

  it('limit with offset (mlr head / tail), and a chain of every step into each output format', async () => {
    expect(await csvOut(STAFF, [{ op: 'select', columns: ['name'] }, { op: 'limit', count: 2, offset: 5 }])).toBe(lines('name', 'Fay', 'Gus'));
    expect(await csvOut(STAFF, [{ op: 'limit', count: 0 }, { op: 'select', columns: ['name'] }])).toBe(lines('name'));
    const steps = [
      { op: 'filter', column: 'salary', operator: 'not_null' },
      { op: 'group', keys: ['dept'], aggregates: [{ op: 'sum', column: 'salary', as: 'total' }] },
      { op: 'sort', keys: [{ column: 'total', direction: 'desc' }] },
      { op: 'limit', count: 2 },
    ];
    expect(await csvOut(STAFF, steps, { to: 'tsv' })).toBe('dept\ttotal\r\neng\t340\r\nSales\t95.5\r\n');
    expect(JSON.parse(await csvOut(STAFF, steps, { to: 'json' }))).toStrictEqual([{ dept: 'eng', total: 340 }, { dept: 'Sales', total: 95.5 }]);
    expect(await csvOut(STAFF, steps, { to: 'xml' })).toContain('<row>\n    <dept>eng</dept>\n    <total>340</total>\n  </row>');
    const b64 = await transform(Buffer.from(STAFF).toString('base64'), steps, { encoding: 'base64' });
    expect(Buffer.from(b64.content as string, 'base64').toString()).toBe(lines('dept,total', 'eng,340', 'Sales,95.5'));
  });

  it('reads JSON and XML too, and keeps a __proto__ column an ordinary column', async () => {
    const r = await transform('[{"__proto__":"x","n":2},{"__proto__":"y","n":1}]', [{ op: 'sort', keys: [{ column: 'n' }] }, { op: 'select', columns: [{ column: '__proto__', as: 'p' }] }]);
    expect(r).toMatchObject({ from: 'json', to: 'json', columns: ['p'] });
    expect(JSON.parse(r.content as string)).toStrictEqual([{ p: 'y' }, { p: 'x' }]);
    expect(Object.prototype).not.toHaveProperty('p');
    const xml = await transform('<rows><row><a>2</a></row><row><a>1</a></row></rows>', [{ op: 'sort', keys: [{ column: 'a' }] }], { to: 'csv' });
    expect(xml).toMatchObject({ from: 'xml', to: 'csv', content: lines('a', '1', '2') });
  });
});

describe('transform: refusals name the step', () => {
  const fails = (steps: unknown, extra: Record<string, unknown> = {}) => h.failure(tool, { action: 'transform', content: STAFF, steps, ...extra });

  it('422 for steps that do not fit the content (a column it lacks, a column named twice), naming the step and the columns there are', async () => {
    expect(await fails([{ op: 'select', columns: ['name'] }, { op: 'filter', column: 'salary', operator: 'is_null' }])).toStrictEqual({
      status: 422,
      code: 'PARSE_ERROR',
      message: 'steps.1.column: no column "salary" (the columns here are "name")',
      details: { step: 1, path: 'steps.1.column' },
    });
    expect(await fails([{ op: 'sort', keys: [{ column: 'nope' }] }])).toMatchObject({ status: 422, details: { path: 'steps.0.keys.0.column' } });
    expect(await fails([{ op: 'dedupe', keys: ['name', 'nope'] }])).toMatchObject({ status: 422, details: { path: 'steps.0.keys.1' } });
    expect(await fails([{ op: 'group', keys: ['dept'], aggregates: [{ op: 'sum', column: 'x' }] }])).toMatchObject({ status: 422, details: { path: 'steps.0.aggregates.0.column' } });
    expect(await fails([{ op: 'select', columns: ['name', { column: 'dept', as: 'name' }] }])).toMatchObject({ status: 422, details: { path: 'steps.0.columns.1' } });
    expect(await fails([{ op: 'group', keys: ['dept'], aggregates: [{ op: 'count', as: 'dept' }] }])).toMatchObject({ status: 422, details: { path: 'steps.0.aggregates.0.as' } });
  });

  it('400 from the schema for a step whose shape is wrong: each operator states the value it takes', async () => {
    const path = async (steps: unknown) => ((await fails(steps)) as { status: number; details: Array<{ path: string }> }).details.map((d) => `${d.path}`);
    expect(await fails([{ op: 'filter', column: 'dept', operator: 'in', value: 'eng' }])).toMatchObject({ status: 400, code: 'INVALID_INPUT' });
    expect(await path([{ op: 'filter', column: 'dept', operator: 'in', value: 'eng' }])).toStrictEqual(['steps.0.value']);
    expect(await path([{ op: 'filter', column: 'dept', operator: 'eq' }])).toStrictEqual(['steps.0.value']);
    expect(await path([{ op: 'filter', column: 'dept', operator: 'lt', value: null }])).toStrictEqual(['steps.0.value']);
    expect(await path([{ op: 'filter', column: 'dept', operator: 'contains', value: [1] }])).toStrictEqual(['steps.0.value']);
    expect(await path([{ op: 'filter', column: 'dept', operator: 'matches', value: '.*' }])).toStrictEqual(['steps.0.operator']);
    expect(await path([{ op: 'eval', code: 'process.exit()' }])).toStrictEqual(['steps.0.op']);
    expect(await path([{ op: 'group', aggregates: [{ op: 'sum' }] }])).toStrictEqual(['steps.0.aggregates.0.column']);
    expect(await path([{ op: 'group', aggregates: [{ op: 'median', column: 'salary' }] }])).toStrictEqual(['steps.0.aggregates.0.op']);
    expect(await path(Array.from({ length: MAX_STEPS + 1 }, () => ({ op: 'limit', count: 1 })))).toStrictEqual(['steps']);
    expect(await path([])).toStrictEqual(['steps']);
    expect(await h.failure(tool, { action: 'transform', content: STAFF })).toMatchObject({ status: 400, details: [{ path: 'steps' }] });
  });

  it('422 when a sum or mean meets text, naming the row and column', async () => {
    expect(await fails([{ op: 'group', aggregates: [{ op: 'sum', column: 'code' }] }])).toStrictEqual({
      status: 422,
      code: 'PARSE_ERROR',
      message: 'steps.0: row 6, column "code": "file10" is not a number (sum needs numbers; filter such rows out first)',
      details: { step: 0, row: 6, column: 'code' },
    });
  });
});

describe('transform: hostile sizes stay bounded', () => {
  const groupsCsv = (n: number) => 'k,v\n' + Array.from({ length: n }, (_, i) => `key${i},${i % 7}`).join('\n') + '\n';

  it('10^5 distinct groups: one row each, with the right counts', async () => {
    const r = await transform(groupsCsv(100_000), [{ op: 'group', keys: ['k'], aggregates: [{ op: 'count' }, { op: 'sum', column: 'v' }] }, { op: 'limit', count: 3, offset: 99_997 }]);
    expect(r.content).toBe(lines('k,count,v_sum', 'key99997,1,2', 'key99998,1,3', 'key99999,1,4'));
  }, 60_000);

  it('a deep sort: 32 keys, shared prefixes, every row tied on all but the last key', async () => {
    const cols = Array.from({ length: 32 }, (_, i) => `c${i}`);
    const prefix = 'p'.repeat(50);
    const n = 4_000; // 32 × 55 × 4,000 ≈ 7 MB of CSV, under the 10 MiB content limit
    const rows = Array.from({ length: n }, (_, i) => [...cols.slice(0, 31).map(() => prefix), `${prefix}${n - i}`].join(','));
    const csv = cols.join(',') + '\n' + rows.join('\n') + '\n';
    const r = await transform(csv, [{ op: 'sort', keys: cols.map((column) => ({ column })) }, { op: 'select', columns: ['c31'] }, { op: 'limit', count: 2 }]);
    expect(r.content).toBe(lines('c31', `${prefix}1`, `${prefix}2`));
  }, 60_000);

  it('sort and group grow linearly-ish with the rows (n versus 4n, CPU time)', async () => {
    const shuffled = (n: number) => 'k,v\n' + Array.from({ length: n }, (_, i) => `${(i * 7919) % n},x${i % 1000}`).join('\n') + '\n';
    const g = await growth(async (n) => {
      const r = await transform(shuffled(n), [
        { op: 'sort', keys: [{ column: 'k', direction: 'desc' }] },
        { op: 'group', keys: ['v'], aggregates: [{ op: 'count' }, { op: 'max', column: 'k' }] },
        { op: 'limit', count: 1 },
      ]);
      expect(r.rowCount).toBe(1);
    }, { from: 5_000, max: 200_000 });
    expect(g.ratio, g.text).toBeLessThan(MAX_GROWTH);
  }, GROWTH_TIMEOUT_MS);
});

import { describe, expect, it } from 'vitest';
import { useToolHarness } from '../../../test/harness.js';
import { growth, GROWTH_TIMEOUT_MS, MAX_GROWTH } from '../../../test/growth.js';
import { SQL_MAX_DEPTH, SQL_MAX_NESTING, SQL_MAX_STATEMENTS, sqlFormat, uppercaseInPlace } from './sql-format.js';

const t = useToolHarness();
const call = (input: Record<string, unknown>) => t.call(sqlFormat, input);
const run = async (input: string, action: string, dialect = 'sql') => (await call({ input, action, dialect })).result as string;
const failure = async (input: Record<string, unknown>) => {
  const { status: _status, ...error } = await t.failure(sqlFormat, input);
  return error;
};

const QUERY = `select 'select' as "from", a.id, count(*) from "from" a -- a comment
left   join b on a.id=b.id /* block */ where x in ( 1 , 2,3 ) and y = 'it''s  x' and t.select = 1
group by a.id order by 2 desc limit 10`;

describe('sql_format', () => {
  it('beautifies with sql-formatter (default action and dialect)', async () => {
    expect(await call({ input: QUERY })).toStrictEqual({
      action: 'beautify',
      result: [
        'select',
        `  'select' as "from",`,
        '  a.id,',
        '  count(*)',
        'from',
        '  "from" a -- a comment',
        '  left join b on a.id = b.id /* block */',
        'where',
        '  x in (1, 2, 3)',
        `  and y = 'it''s  x'`,
        '  and t.select = 1',
        'group by',
        '  a.id',
        'order by',
        '  2 desc',
        'limit',
        '  10',
      ].join('\n'),
    });
  });

  it('honours indent', async () => {
    expect((await call({ input: 'select a from t', indent: 4 })).result).toBe('select\n    a\nfrom\n    t');
  });

  it('upper-cases keywords only, where they stand', async () => {
    expect(await call({ input: QUERY, action: 'uppercase' })).toStrictEqual({
      action: 'uppercase',
      result: `SELECT 'select' AS "from", a.id, count(*) FROM "from" a -- a comment
LEFT   JOIN b ON a.id=b.id /* block */ WHERE x IN ( 1 , 2,3 ) AND y = 'it''s  x' AND t.select = 1
GROUP BY a.id ORDER BY 2 DESC LIMIT 10`,
    });
    expect(await run(`select 'select' from "from"`, 'uppercase')).toBe(`SELECT 'select' FROM "from"`);
    expect(await run('select cast(x as int) from t -- select from where', 'uppercase')).toBe('SELECT cast(x AS INT) FROM t -- select from where');
  });

  it.each([
    ['mysql', "select year, count from t where b not like 'x%' and c is null and d is not true and e rlike 'y' and `f` like ? and lower(g) like 'z' and h sounds like 'p'",
      "SELECT year, count FROM t WHERE b NOT LIKE 'x%' AND c IS NULL AND d IS NOT TRUE AND e RLIKE 'y' AND `f` LIKE ? AND lower(g) LIKE 'z' AND h SOUNDS LIKE 'p'"],
    ['sqlite', "select a from t where b like 'x' and c glob 'y*' and d is not null", "SELECT a FROM t WHERE b LIKE 'x' AND c GLOB 'y*' AND d IS NOT NULL"],
    ['mariadb', "select a from t where b like 'x' -- like\n and c is null", "SELECT a FROM t WHERE b LIKE 'x' -- like\n AND c IS NULL"],
  ])('%s: operator keywords the dialect lists as functions (like, is null, rlike, glob) are upper-cased too', async (dialect, input, upper) => {
    expect(await run(input, 'uppercase', dialect)).toBe(upper);
  });

  it.each([
    ['mysql', "select `select`, 'a\\'b' from t # where\nwhere x = 1", "select `select`,'a\\'b' from t where x = 1", "SELECT `select`, 'a\\'b' FROM t # where\nWHERE x = 1"],
    ['mariadb', 'select /*! STRAIGHT_JOIN */ a from t -- c', 'select /*! STRAIGHT_JOIN */ a from t', 'SELECT /*! STRAIGHT_JOIN */ a FROM t -- c'],
    ['postgresql', "select $$ -- not a comment $$, E'a\\'b' /* c /* nested */ */ from t -- end\n", "select $$ -- not a comment $$,E'a\\'b' from t", "SELECT $$ -- not a comment $$, E'a\\'b' /* c /* nested */ */ FROM t -- end\n"],
    ['sqlite', 'select [order], "group" from t', 'select [order],"group" from t', 'SELECT [order], "group" FROM t'],
    ['tsql', "select [a b], N'x' from [dbo].[t] where @p = 1", "select [a b],N'x' from [dbo].[t] where @p = 1", "SELECT [a b], N'x' FROM [dbo].[t] WHERE @p = 1"],
    ['bigquery', "select `proj.ds.t`.a, r'\\d+' from `proj.ds.t`", "select `proj.ds.t`.a,r'\\d+' from `proj.ds.t`", "SELECT `proj.ds.t`.a, r'\\d+' FROM `proj.ds.t`"],
    ['plsql', "select q'[it's]' from dual", "select q'[it's]' from dual", "SELECT q'[it's]' FROM dual"],
  ])('%s: literals and quoted names survive minify and uppercase byte for byte', async (dialect, input, minified, upper) => {
    expect(await run(input, 'minify', dialect)).toBe(minified);
    expect(await run(input, 'uppercase', dialect)).toBe(upper);
  });

  it('minifies to one line without comments, keeping hints and multi-line literals', async () => {
    expect(await call({ input: QUERY, action: 'minify' })).toStrictEqual({
      action: 'minify',
      result: `select 'select' as "from",a.id,count(*) from "from" a left join b on a.id=b.id where x in (1,2,3) and y = 'it''s  x' and t.select = 1 group by a.id order by 2 desc limit 10`,
    });
    expect(await run("select a -- x\n  from t;\n\n/*+ INDEX(t i) */ select 'line1\nline2'  ;", 'minify')).toBe("select a from t; /*+ INDEX(t i) */ select 'line1\nline2';");
    expect(await run('select a/*x*/from t', 'minify')).toBe('select a from t');
    expect(await run('select a - -b from t', 'minify')).toBe('select a - -b from t');
  });

  it('minify is stable, and minifying the beautified text changes only blanks', async () => {
    for (const dialect of ['sql', 'postgresql', 'mysql']) {
      const min = await run(QUERY, 'minify', dialect);
      expect(await run(min, 'minify', dialect)).toBe(min);
      const again = await run(await run(QUERY, 'beautify', dialect), 'minify', dialect);
      expect(again).not.toContain('\n');
      expect(again.replace(/\s/g, '')).toBe(min.replace(/\s/g, ''));
    }
  });

  it('uppercase falls back to the formatted text when the formatter changed more than blanks', () => {
    expect(uppercaseInPlace('select  a', 'SELECT\n  a')).toBe('SELECT  a');
    expect(uppercaseInPlace('select a;', 'SELECT\n  a')).toBe('SELECT\n  a');
    expect(uppercaseInPlace('select a <> b', 'SELECT a != b')).toBe('SELECT a != b');
  });

  it.each(['beautify', 'minify', 'uppercase'])('%s refuses broken SQL with 422 and a position', async (action) => {
    expect(await failure({ input: 'select a from b where ;;; ))) (', action })).toStrictEqual({
      code: 'PARSE_ERROR',
      message: 'Invalid SQL: Parse error at token: ) at line 1 column 27 (if the query is written for one database, set dialect)',
      details: { line: 1, column: 27 },
    });
    expect(await failure({ input: "select 1\nfrom t where x = 'open", action, dialect: 'postgresql' })).toStrictEqual({
      code: 'PARSE_ERROR',
      message: `Invalid SQL: Parse error: Unexpected "'open" at line 2 column 18.`,
      details: { line: 2, column: 18 },
    });
  });

  it.each(['beautify', 'minify', 'uppercase'])('%s refuses 5,000 nested parentheses with 422, in time linear in the nesting', async (action) => {
    const nested = (n: number) => ({ input: 'select ' + '('.repeat(n) + '1' + ')'.repeat(n), action });
    const refused = { code: 'PARSE_ERROR', message: `SQL nested deeper than ${SQL_MAX_DEPTH} levels (parentheses or CASE) is not supported` };
    expect(await failure(nested(5000))).toStrictEqual(refused);
    const g = await growth(async (n) => expect(await failure(nested(n))).toStrictEqual(refused), { from: 1000, max: 49_000 });
    expect(g.ratio, g.text).toBeLessThan(MAX_GROWTH);
  }, GROWTH_TIMEOUT_MS);

  it(`formats ${SQL_MAX_DEPTH} nested parentheses and CASEs`, async () => {
    expect(await run('select ' + '('.repeat(SQL_MAX_DEPTH) + '1' + ')'.repeat(SQL_MAX_DEPTH), 'minify')).toBe('select ' + '('.repeat(SQL_MAX_DEPTH) + '1' + ')'.repeat(SQL_MAX_DEPTH));
    const cases = 'select ' + 'case when a then '.repeat(SQL_MAX_DEPTH + 1) + '1' + ' end'.repeat(SQL_MAX_DEPTH + 1);
    expect((await failure({ input: cases })).code).toBe('PARSE_ERROR');
  });

  it.each(['beautify', 'minify', 'uppercase'])('%s of 100 KB of 467 statements 99 parentheses deep took 11-24 s: refused with 400 before parsing', async (action) => {
    const statement = 'SELECT ' + '('.repeat(99) + '1' + ')'.repeat(99) + ' FROM t;';
    const input = statement.repeat(467);
    const message = `Too much nesting for one call: each parenthesis or CASE counted at its depth adds up to ${467 * 4950} (limit ${SQL_MAX_NESTING}); split the statements over several calls`;
    expect(await failure({ input, action })).toStrictEqual({ code: 'INVALID_INPUT', message, details: [{ path: 'input', message }] });
    // As much nesting as one call allows (10 such statements: 49,500) is formatted.
    expect(await run(statement.repeat(10), action)).toContain('1');
    expect((await failure({ input: statement.repeat(11), action })).code).toBe('INVALID_INPUT');
  });

  it('a stack overflow inside sql-formatter is a 422, not a 500', async () => {
    expect(await failure({ input: 'select a' + '.a'.repeat(40_000) })).toStrictEqual({ code: 'PARSE_ERROR', message: 'The SQL is nested too deeply to format' });
  });

  it(`refuses more than ${SQL_MAX_STATEMENTS} statements with 400`, async () => {
    const message = `At most ${SQL_MAX_STATEMENTS} statements per call`;
    expect(await failure({ input: 'select 1;'.repeat(SQL_MAX_STATEMENTS + 1), action: 'minify' })).toStrictEqual({ code: 'INVALID_INPUT', message, details: [{ path: 'input', message }] });
    expect(await run('select 1; '.repeat(SQL_MAX_STATEMENTS), 'minify')).toBe('select 1; '.repeat(SQL_MAX_STATEMENTS).trimEnd());
  });

  it.each([
    ['no input', {}, 'input'],
    ['a number as input', { input: 1 }, 'input'],
    ['input over 100,000 characters', { input: 'x'.repeat(100_001) }, 'input'],
    ['an unknown action', { input: 'select 1', action: 'lowercase' }, 'action'],
    ['an unknown dialect', { input: 'select 1', dialect: 'oracle' }, 'dialect'],
    ['a dialect sql-formatter has but the contract does not', { input: 'select 1', dialect: 'snowflake' }, 'dialect'],
    ['indent 0', { input: 'select 1', indent: 0 }, 'indent'],
    ['indent 9', { input: 'select 1', indent: 9 }, 'indent'],
  ])('refuses %s with 400', async (_label, input, path) => {
    const e = await failure(input as Record<string, unknown>);
    expect([e.code, (e.details as Array<{ path: string }>).map((d) => d.path)]).toStrictEqual(['INVALID_INPUT', [path]]);
  });

  it('formats 100 KB in time linear in its statements', async () => {
    const input = (n: number) => 'select a, b from t where x = 1;\n'.repeat(n);
    expect((await run(input(900), 'uppercase')).startsWith('SELECT a, b FROM t WHERE x = 1;')).toBe(true);
    const g = await growth(async (n) => expect((await run(input(n), 'uppercase')).length).toBe(input(n).length), { from: 25, max: SQL_MAX_STATEMENTS });
    expect(g.ratio, g.text).toBeLessThan(MAX_GROWTH);
  }, GROWTH_TIMEOUT_MS);
});

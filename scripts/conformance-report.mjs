// Judges one conformance-suite run (one requirement set) for a tools-only server.
// Used by scripts/conformance.sh; runs on the suite's Node 22 and borrows its `yaml` package.
//
//   node conformance-report.mjs --results <dir> --revision <rev> --allow <json>
//        --requirements-file <suite's requirements/<rev>.yaml> [--suite-log <file>]
//
// A required server scenario passes when none of its checks is FAILURE, apart from checks the
// allow-list excuses: "<scenario>" (the whole scenario does not apply) or "<scenario>:<check-id>"
// (one check does not apply, e.g. it needs one of the suite's fixture tools). A scenario that
// produced no checks.json failed (crash/timeout) unless allow-listed whole. Not-scored scenarios
// (extensions such as Tasks, pending ones) are reported and never fail the run.
// Exit 1 when a required, applicable scenario fails.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const args = {};
for (let i = 2; i < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
for (const k of ['results', 'revision', 'allow', 'requirements-file']) {
  if (!args[k]) {
    console.error(`conformance-report: --${k} is required`);
    process.exit(2);
  }
}
const rev = args.revision;
const requireFromSuite = createRequire(path.resolve(args['requirements-file']));
const YAML = requireFromSuite('yaml');
const reqs = YAML.parse(fs.readFileSync(args['requirements-file'], 'utf8'));
const required = reqs.server ?? [];
const notScored = (reqs.not_scored ?? []).filter((e) => e.leg === 'server');
const allowAll = JSON.parse(fs.readFileSync(args.allow, 'utf8'));
const allow = allowAll[rev] ?? {};
for (const k of Object.keys(allow)) {
  const scen = k.split(':')[0];
  if (!required.includes(scen) && !notScored.some((e) => e.scenario === scen)) {
    console.error(`conformance-report: allow-list entry "${k}" names no server scenario of ${rev}`);
  }
}

/** scenario → checks[] (latest run directory per scenario), or null when it left no checks.json. */
const runs = new Map();
if (fs.existsSync(args.results)) {
  for (const d of fs.readdirSync(args.results).sort()) {
    const m = d.match(/^server-(.+)-\d{4}-\d\d-\d\dT[\d-]+Z$/);
    if (!m) continue;
    const f = path.join(args.results, d, 'checks.json');
    runs.set(m[1], fs.existsSync(f) ? JSON.parse(fs.readFileSync(f, 'utf8')) : null);
  }
}

function judge(scenario) {
  if (!runs.has(scenario)) return { verdict: 'missing', failing: [], excused: [] };
  const checks = runs.get(scenario);
  if (checks === null) return { verdict: 'no-checks', failing: [], excused: [] };
  const failing = new Map();
  const excused = new Map();
  for (const c of checks) {
    if (c.status !== 'FAILURE') continue;
    const key = `${scenario}:${c.id}`;
    (allow[scenario] !== undefined || allow[key] !== undefined ? excused : failing).set(c.id, c.errorMessage ?? '');
  }
  const passed = checks.filter((c) => c.status === 'SUCCESS').length;
  return { verdict: failing.size === 0 ? 'pass' : 'fail', failing: [...failing], excused: [...excused], passed };
}

let requiredPass = 0;
let applicable = 0;
let notApplicable = 0;
const failures = [];
const lines = [];
for (const s of required) {
  const j = judge(s);
  const wholeNA = allow[s] !== undefined;
  if (wholeNA) {
    notApplicable++;
    const note = j.verdict === 'pass' && j.excused.length === 0 ? ' (reported no failing check this run)' : '';
    lines.push(`  n/a   ${s} — ${allow[s]}${note}`);
    continue;
  }
  applicable++;
  if (j.verdict === 'pass') {
    requiredPass++;
    lines.push(`  PASS  ${s}${j.excused.length ? ` (${j.excused.length} check(s) n/a: ${j.excused.map(([id]) => id).join(', ')})` : ''}`);
  } else {
    failures.push(s);
    const why =
      j.verdict === 'missing' ? 'did not run' : j.verdict === 'no-checks' ? 'no checks.json (crash or timeout)' : j.failing.map(([id, msg]) => `${id}: ${msg.slice(0, 160)}`).join('\n          ');
    lines.push(`  FAIL  ${s}\n          ${why}`);
  }
}
console.log(`\n== MCP conformance, requirements ${rev} (suite: server leg) ==`);
console.log(lines.join('\n'));
if (notScored.length) {
  console.log(`  -- not scored for ${rev} (reported only):`);
  for (const e of notScored) {
    const j = judge(e.scenario);
    const na = j.excused.length ? `, ${j.excused.length} check(s) n/a: ${j.excused.map(([id]) => id).join(', ')}` : '';
    const tag = j.verdict === 'pass' ? `pass (${j.passed} check(s) passed${na})` : j.verdict === 'fail' ? `fail (${j.failing.length} check(s))` : j.verdict;
    console.log(`  ${e.reason.padEnd(20)} ${e.scenario}: ${tag}`);
  }
}
const suiteTotal = args['suite-log'] && fs.existsSync(args['suite-log']) ? (fs.readFileSync(args['suite-log'], 'utf8').match(/^Total: .*$/m) ?? [''])[0] : '';
console.log(
  `== ${rev}: ${requiredPass}/${applicable} applicable required scenarios pass; ${notApplicable} of ${required.length} not applicable to a tools-only server` +
    (suiteTotal ? `; suite's own count of checks: ${suiteTotal.replace(/^Total: /, '')}` : ''),
);
if (failures.length) console.log(`== ${rev}: FAILING: ${failures.join(', ')}`);
process.exit(failures.length ? 1 : 0);

/**
 * Cross-field input rules (`InputRule`), declared once on a tool and read three ways: the
 * validation (`defineTool` adds `ruleIssues` as a zod refinement, so a broken rule is a 400
 * INVALID_INPUT like any field error), the JSON Schema of MCP and OpenAPI (`inputRuleSchema`)
 * and the OpenAPI operation's text (`inputRuleText`).
 */

/**
 * A cross-field input rule: `exactlyOne` of the fields must be present; or, when `field` has one
 * of the values `in`, the fields of `require` must be present; or the two `distinct` fields
 * must differ (compared through `key` when given; `message` for the 400's detail).
 */
export type InputRule =
  | { exactlyOne: readonly string[] }
  | { when: { field: string; in: readonly string[] }; require: readonly string[] }
  | { distinct: readonly [string, string]; key?: (value: unknown) => unknown; message?: string };

/** A rule broken by `input`, as a field-level detail of the 400. */
export interface RuleIssue {
  path: string;
  message: string;
}

const present = (input: Record<string, unknown>, field: string) => input[field] !== undefined;

/** The issues of every rule `input` (the parsed input, defaults applied) breaks, in rule order. */
export function ruleIssues(rules: readonly InputRule[], input: Record<string, unknown>): RuleIssue[] {
  const issues: RuleIssue[] = [];
  for (const rule of rules) {
    if ('exactlyOne' in rule) {
      const f = rule.exactlyOne;
      if (f.filter((x) => present(input, x)).length !== 1) issues.push({ path: f[0]!, message: `Give exactly one of ${f.join(' or ')}` });
    } else if ('when' in rule) {
      const value = input[rule.when.field];
      if (typeof value !== 'string' || !rule.when.in.includes(value)) continue;
      for (const f of rule.require) if (!present(input, f)) issues.push({ path: f, message: `Required for ${rule.when.field} ${value}` });
    } else {
      const [a, b] = rule.distinct;
      const key = rule.key ?? ((v: unknown) => v);
      if (present(input, a) && present(input, b) && key(input[a]) === key(input[b])) issues.push({ path: a, message: rule.message ?? `${a} and ${b} must differ` });
    }
  }
  return issues;
}

/**
 * The JSON Schema of one rule, or null when JSON Schema cannot state it (`distinct`: the field
 * descriptions say it). `fields`: every property of the object, named (as `{}`) in each
 * subschema that requires fields — OpenAPI linters read a required-but-undefined property, or
 * a property one subschema does not evaluate, as a mistake; empty for a lean MCP schema.
 */
export function inputRuleSchema(rule: InputRule, fields: readonly string[] = []): Record<string, unknown> | null {
  const all = Object.fromEntries(fields.map((f) => [f, {}]));
  const req = (names: readonly string[]) => (fields.length ? { properties: all, required: [...names] } : { required: [...names] });
  // Exactly one: at least one (anyOf), and no two together (a oneOf of overlapping branches reads as a mistake).
  if ('exactlyOne' in rule) {
    const f = rule.exactlyOne;
    const pairs = f.flatMap((a, i) => f.slice(i + 1).map((b) => req([a, b])));
    return { anyOf: f.map((x) => req([x])), not: pairs.length === 1 ? pairs[0] : { anyOf: pairs } };
  }
  if ('when' in rule) {
    return {
      if: { required: [rule.when.field], properties: { [rule.when.field]: { enum: [...rule.when.in] } } },
      then: req(rule.require),
    };
  }
  return null;
}

/** The JSON Schema keywords of a list of rules: `allOf` with one entry per rule JSON Schema can state. */
export function rulesSchema(rules: readonly InputRule[], fields: readonly string[] = []): Record<string, unknown>[] {
  return rules.map((r) => inputRuleSchema(r, fields)).filter((s): s is Record<string, unknown> => s !== null);
}

/** The rule in words, for the OpenAPI operation's description. */
export function inputRuleText(rule: InputRule): string {
  const code = (f: string) => `\`${f}\``;
  if ('exactlyOne' in rule) return `give exactly one of ${rule.exactlyOne.map(code).join(' or ')}`;
  if ('distinct' in rule) return `${rule.distinct.map(code).join(' and ')} must differ`;
  const fields = rule.require.map(code).join(' and ');
  return `${fields} ${rule.require.length > 1 ? 'are' : 'is'} required when ${code(rule.when.field)} is ${rule.when.in.map(code).join(', ')}`;
}

/** The fields a rule names. */
export function ruleFields(rule: InputRule): string[] {
  if ('exactlyOne' in rule) return [...rule.exactlyOne];
  if ('distinct' in rule) return [...rule.distinct];
  return [rule.when.field, ...rule.require];
}

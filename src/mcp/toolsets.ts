/**
 * Toolsets (issue 34): a client loads only the tools it needs. Each family is a toolset; a
 * selection is the union of named toolsets and named tools, normalised to a set of tool names.
 * A selection is served by a registry of its own (`narrow`), so every MCP path — our dispatch,
 * the SDK's server, both eras, HTTP and stdio — lists only its tools and answers a call of any
 * other as the unknown tool it is for that client.
 */
import { Registry } from '../registry.js';

/** A chosen set of tools, or the reason it cannot be served (unknown names). */
export type Choice = { names: readonly string[]; key: string } | { error: string; unknown: string[]; valid: { toolsets: string[]; tools: string[] } };

/** A comma list (`a,b , c`) as names; empty items are ignored. */
export function splitList(raw: string | null | undefined): string[] {
  if (raw === null || raw === undefined) return [];
  return raw.split(',').map((s) => s.trim()).filter(Boolean);
}

/**
 * The tools `toolsets` and `tools` name together (their union), in registry order (so two
 * spellings of one selection share a key). Undefined: nothing named.
 */
export function choose(registry: Registry, toolsets: readonly string[], tools: readonly string[]): Choice | undefined {
  if (toolsets.length === 0 && tools.length === 0) return undefined;
  const groups = new Map(registry.groups.map((g) => [g.name, g]));
  const unknown = [...toolsets.filter((n) => !groups.has(n)), ...tools.filter((n) => !registry.get(n))];
  if (unknown.length > 0) {
    const valid = { toolsets: [...groups.keys()], tools: registry.tools.map((t) => t.name) };
    return {
      error: `Unknown toolset or tool: ${unknown.join(', ')}. Toolsets: ${valid.toolsets.join(', ')}. Tools: ${valid.tools.join(', ')}`,
      unknown,
      valid,
    };
  }
  const wanted = new Set(tools);
  for (const n of toolsets) for (const t of groups.get(n)!.tools) wanted.add(t.name);
  const names = registry.tools.map((t) => t.name).filter((n) => wanted.has(n));
  return { names, key: names.join(',') };
}

/** The registry of a selection: the same groups (families), each with only its chosen tools. */
export function narrow(registry: Registry, names: readonly string[]): Registry {
  const keep = new Set(names);
  return new Registry(registry.groups.map((g) => ({ ...g, tools: g.tools.filter((t) => keep.has(t.name)) })));
}

/**
 * What each selection is served by, built once per distinct selection (keyed by its tool names,
 * however it was spelled) and kept in a small bounded cache: a client cannot make the server
 * build one per request while its selection stays among the `max` most recently used (≈ 1 ms
 * to build one of 21 tools; the least recently used goes first).
 */
export class SelectionCache<T> {
  readonly #entries = new Map<string, T>();
  constructor(
    readonly build: (names: readonly string[]) => T,
    readonly max = 32,
  ) {}

  get(choice: { names: readonly string[]; key: string }): T {
    const hit = this.#entries.get(choice.key);
    if (hit !== undefined) {
      // Least recently used goes first: a client cycling through selections does not evict the ones in use.
      this.#entries.delete(choice.key);
      this.#entries.set(choice.key, hit);
      return hit;
    }
    const made = this.build(choice.names);
    if (this.#entries.size >= this.max) this.#entries.delete(this.#entries.keys().next().value!);
    this.#entries.set(choice.key, made);
    return made;
  }

  get size(): number {
    return this.#entries.size;
  }
}

/** A flag's value: `--name a,b` or `--name=a,b` (repeatable); undefined when absent. */
function flag(args: readonly string[], name: string): string[] | undefined {
  let out: string[] | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === name) out = [...(out ?? []), ...splitList(args[++i])];
    else if (a.startsWith(`${name}=`)) out = [...(out ?? []), ...splitList(a.slice(name.length + 1))];
  }
  return out;
}

/**
 * The registry a stdio launch serves: `--toolsets`/`--tools` (a private cache scope: the
 * launch chose it), else the operator's TOOLSETS, else every tool. A string: why it cannot start.
 */
export function stdioSelection(
  registry: Registry,
  args: readonly string[],
  operator: readonly string[] | null,
): { registry: Registry; cacheScope: 'public' | 'private' } | string {
  const sets = flag(args, '--toolsets');
  const tools = flag(args, '--tools');
  const own = sets !== undefined || tools !== undefined;
  const c = own ? choose(registry, sets ?? [], tools ?? []) : operator ? choose(registry, operator, []) : undefined;
  if (own && c === undefined) return '--toolsets/--tools name no toolset or tool';
  if (c === undefined) return { registry, cacheScope: 'public' };
  if ('error' in c) return `${own ? '--toolsets/--tools' : 'TOOLSETS'}: ${c.error}`;
  return { registry: narrow(registry, c.names), cacheScope: own ? 'private' : 'public' };
}

import type { ToolGroup } from '../registry.js';
import type { Services, ThreadStarter } from '../services.js';
import type { AnyCollectionDef, Store } from '../state/index.js';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { AnyRoute } from './route.js';
import { TASK_COLLECTIONS } from './tasks/record.js';

/** Something a family runs in the background of a serving process (e.g. the cron scheduler). */
export interface BackgroundService {
  /** Idempotent: a draining server stops it first, and the closers call it again. */
  stop(): Promise<void> | void;
}

/**
 * A feature module: its tools (with the OpenAPI tag they share), plus whatever else it brings.
 * `app.ts`, `main.ts`, `openapi/` and the MCP module loop over the families and name none.
 */
export interface Family extends ToolGroup {
  /** One line for MCP's `instructions`: when an agent should reach for this family's tools. */
  instructions: string;
  /** Its manifest's thread starter (FamilyManifest.startThread). */
  startThread?: ThreadStarter;
  /**
   * Non-tool HTTP routes as data (e.g. `GET /s/{code}`): mounted before the tool routes and
   * documented in OpenAPI from the same objects (src/core/route.ts).
   */
  routes?: readonly AnyRoute[];
  /**
   * A hot path answered before the router, or declined (undefined) to go through it as usual:
   * for a request so frequent and so simple that the router and its context cost more than the
   * answer (the short-link redirect of a code served before: 1.36 → 1.11 × a bare hono GET's
   * CPU per request, `BENCH_ONLY=mcp npm run bench`). It sees
   * every request the browser guard passed, over a real socket (`rawPath` is the request
   * line's path and query, undecoded; `headers`: Node's request headers, names lower-case),
   * must decline anything unusual, and must answer exactly what its route would. It may answer
   * later (a promise): one that gives undefined declines then, and the router takes the request.
   */
  preroute?(services: Services): (method: string, rawPath: string, headers?: Readonly<Record<string, string | string[] | undefined>>) => Response | Promise<Response | undefined> | undefined;
  /** Collections the family keeps (from its manifest); the store loads them all before the server reports ready. */
  collections?: readonly AnyCollectionDef[];
  /** Started by `serve` (not by stdio launches or tests), stopped on shutdown. */
  background?(services: Services): BackgroundService;
}

/** What a family's index.ts declares: everything but what its manifest says. */
export type FamilyBody = Omit<Family, 'name' | 'collections'>;

/**
 * A family's light half (`src/tools/<family>/manifest.ts`): its name and collections, importable
 * without the tools' libraries, so that `serve` can start loading the data before it imports
 * them (issue 18); `load` imports the rest (`./index.js`).
 */
export interface FamilyManifest {
  name: string;
  collections?: readonly AnyCollectionDef[];
  /** A thread of the family's own, started with the server's store (src/services.ts, FamilyThread). */
  startThread?: ThreadStarter;
  /**
   * What a command-line tool that reads or writes the records without a server (`export`,
   * `import`) runs first on the opened store: e.g. what a thread of the family left to finish
   * after a crash (the shortener's visit log).
   */
  settleForCli?: (store: Store, config: Config, log: Logger) => Promise<unknown>;
  load(): Promise<FamilyBody>;
}

/** Declares a family's manifest. Identity function that keeps the types. */
export function defineManifest(m: FamilyManifest): FamilyManifest {
  return m;
}

/** Declares a family's body (its index.ts). Identity function that keeps the types. */
export function defineFamily(f: FamilyBody): FamilyBody {
  return f;
}

/** A whole family: its manifest's name and collections with the body it loads. */
export async function loadFamily(m: FamilyManifest): Promise<Family> {
  const body = await m.load();
  const f: Family = m.collections ? { ...body, name: m.name, collections: m.collections } : { ...body, name: m.name };
  if (m.startThread) f.startThread = m.startThread;
  return f;
}

/** Every collection the server keeps: the families' and the core's own (tasks). */
export function storedCollections(families: ReadonlyArray<Pick<FamilyManifest, 'collections'>>): AnyCollectionDef[] {
  return [...families.flatMap((f) => f.collections ?? []), ...TASK_COLLECTIONS];
}

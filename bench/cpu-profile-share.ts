// What share of a process's busy CPU samples a set of frames takes, from a V8 .cpuprofile
// (node --cpu-prof). A share inside one process is far steadier than CPU per request on a shared
// machine: whatever slows the process slows the metered frames and the rest alike.
import fs from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

/** The share of the busy (non-idle) samples whose nearest own-code frame `mine` claims, and the top frames. */
export function profileShare(file: string, mine: (frame: ProfileNode['callFrame']) => boolean, ownCode: (url: string) => boolean): { busyMs: number; share: number; top: Array<[string, number]> } {
  const p = JSON.parse(fs.readFileSync(file, 'utf8')) as { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] };
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  let busy = 0;
  let claimed = 0;
  const why = new Map<string, number>();
  p.samples.forEach((leafId, i) => {
    const dt = p.timeDeltas[i + 1] ?? 0;
    const leaf = byId.get(leafId)!.callFrame;
    if (leaf.functionName === '(idle)') return;
    busy += dt;
    // Node internals (a clock read, a promise's then) belong to the own-code frame that called them.
    let id: number | undefined = leafId;
    while (id !== undefined && !ownCode(byId.get(id)!.callFrame.url)) id = parent.get(id);
    const frame = id === undefined ? undefined : byId.get(id)!.callFrame;
    if (!frame || !mine(frame)) return;
    claimed += dt;
    const k = `${leaf.functionName || '(anonymous)'} in ${frame.functionName || '(anonymous)'} ${frame.url.replace(/.*\/(dist|node_modules)\//, '')}:${frame.lineNumber + 1}`;
    why.set(k, (why.get(k) ?? 0) + dt);
  });
  const top = [...why].sort((a, b) => b[1] - a[1]).slice(0, 8).map(([k, v]): [string, number] => [k, +((v / busy) * 100).toFixed(3)]);
  return { busyMs: Math.round(busy / 1000), share: busy === 0 ? 0 : claimed / busy, top };
}

// Preloaded into the server a bench starts (`node --import ./bench/loop-delay.ts …`): measures
// the event loop's delay with perf_hooks and, on SIGUSR2, writes its percentiles (ms) to
// LOOP_DELAY_FILE and starts afresh. Bench-only: the service itself has no such route.
// With them, the garbage collector's pauses since the last report (count, longest, total ms,
// and how many lasted 10 ms or more): whether a loop stall is a GC pause or the code's own.
import fs from 'node:fs';
import { constants, monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';

const file = process.env.LOOP_DELAY_FILE;
if (file) {
  const h = monitorEventLoopDelay({ resolution: 10 });
  h.enable();
  let gc = { n: 0, maxMs: 0, totalMs: 0, over10: 0, majorMs: 0, maxMajorMs: 0 };
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      gc.n++;
      gc.totalMs += e.duration;
      if (e.duration > gc.maxMs) gc.maxMs = e.duration;
      if (e.duration >= 10) gc.over10++;
      // perf_hooks.constants.NODE_PERFORMANCE_GC_MAJOR: a mark-compact (the rest: scavenges, incremental steps).
      if (((e as { detail?: { kind?: number } }).detail)?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) {
        gc.majorMs += e.duration;
        if (e.duration > gc.maxMajorMs) gc.maxMajorMs = e.duration;
      }
    }
  }).observe({ entryTypes: ['gc'] });
  process.on('SIGUSR2', () => {
    const ms = (ns: number) => Math.round(ns / 1e4) / 100;
    const r = (x: number) => Math.round(x * 100) / 100;
    // Whole or not at all: the bench polls for the file and reads it as soon as it exists.
    fs.writeFileSync(`${file}.tmp`, JSON.stringify({ p50: ms(h.percentile(50)), p99: ms(h.percentile(99)), max: ms(h.max), n: h.count, gc: { ...gc, maxMs: r(gc.maxMs), totalMs: r(gc.totalMs), majorMs: r(gc.majorMs), maxMajorMs: r(gc.maxMajorMs) } }));
    fs.renameSync(`${file}.tmp`, file);
    h.reset();
    gc = { n: 0, maxMs: 0, totalMs: 0, over10: 0, majorMs: 0, maxMajorMs: 0 };
  });
}

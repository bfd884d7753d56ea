// Preloaded into the server a bench starts (`node --import ./bench/loop-delay.ts …`): measures
// the event loop's delay with perf_hooks and, on SIGUSR2, writes its percentiles (ms) to
// LOOP_DELAY_FILE and starts afresh. Bench-only: the service itself has no such route.
// With them, the garbage collector's pauses since the last report (count, longest, total ms,
// and how many lasted 10 ms or more): whether a loop stall is a GC pause or the code's own.
// And, with LOOP_CPU_TURNS=1, `cpuTurn`: the process CPU time between two ticks of a 1 ms timer —
// about one loop iteration's work — as p99, max and how many exceeded 10 / 20 ms. Unlike the
// delay it does not grow when a loaded machine deschedules the process, so it compares runs on
// a shared one. Off by default: the timer and its getrusage cost a server ≈ 50 ms of CPU a
// second here (7.6 µs per redirect at 7k/s in a profile), which the ratios should not carry.
import fs from 'node:fs';
import { constants, monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';

/** CPU ms between ticks of a 1 ms timer (see above). */
class CpuTurns {
  #ms: number[] = [];
  #last = process.cpuUsage();

  constructor() {
    setInterval(() => {
      const now = process.cpuUsage();
      this.#ms.push((now.user - this.#last.user + now.system - this.#last.system) / 1000);
      this.#last = now;
    }, 1).unref();
  }

  /** The percentiles since the last report; starts afresh. */
  report(): { n: number; p99: number; max: number; over10: number; over20: number } {
    const xs = this.#ms.sort((a, b) => a - b);
    this.#ms = [];
    const r = (x: number | undefined) => Math.round((x ?? NaN) * 100) / 100;
    return { n: xs.length, p99: r(xs[Math.floor(xs.length * 0.99)]), max: r(xs[xs.length - 1]), over10: xs.filter((x) => x > 10).length, over20: xs.filter((x) => x > 20).length };
  }
}

/**
 * The histogram's timer period. perf_hooks records the time between two of its ticks, so an idle
 * loop reads RESOLUTION_MS (10.2 ms p50, 10.4 p99 here): the delay is what lies beyond it (how
 * late the tick came). Until session 16 the bench reported the ticks' spacing as the delay, 10 ms
 * too high (docs/shortener.md, "Session 16").
 */
const RESOLUTION_MS = 10;

const file = process.env.LOOP_DELAY_FILE;
if (file) {
  const h = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
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
  const turns = process.env.LOOP_CPU_TURNS === '1' ? new CpuTurns() : undefined;
  process.on('SIGUSR2', () => {
    const ms = (ns: number) => Math.round(ns / 1e4) / 100;
    /** A tick's lateness: its spacing less the period (see RESOLUTION_MS). */
    const late = (ns: number) => ms(Math.max(0, ns - RESOLUTION_MS * 1e6));
    const r = (x: number) => Math.round(x * 100) / 100;
    // Whole or not at all: the bench polls for the file and reads it as soon as it exists.
    fs.writeFileSync(`${file}.tmp`, JSON.stringify({ p50: late(h.percentile(50)), p99: late(h.percentile(99)), max: late(h.max), tickP99: ms(h.percentile(99)), n: h.count, gc: { ...gc, maxMs: r(gc.maxMs), totalMs: r(gc.totalMs), majorMs: r(gc.majorMs), maxMajorMs: r(gc.maxMajorMs) }, cpuTurn: turns?.report() }));
    fs.renameSync(`${file}.tmp`, file);
    h.reset();
    gc = { n: 0, maxMs: 0, totalMs: 0, over10: 0, majorMs: 0, maxMajorMs: 0 };
  });
}


// Preloaded into the server a bench starts (`node --import ./bench/loop-delay.ts …`): measures
// the event loop's delay with perf_hooks and, on SIGUSR2, writes its percentiles (ms) to
// LOOP_DELAY_FILE and starts afresh. Bench-only: the service itself has no such route.
import fs from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';

const file = process.env.LOOP_DELAY_FILE;
if (file) {
  const h = monitorEventLoopDelay({ resolution: 10 });
  h.enable();
  process.on('SIGUSR2', () => {
    const ms = (ns: number) => Math.round(ns / 1e4) / 100;
    fs.writeFileSync(file, JSON.stringify({ p50: ms(h.percentile(50)), p99: ms(h.percentile(99)), max: ms(h.max), n: h.count }));
    h.reset();
  });
}

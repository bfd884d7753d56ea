/**
 * Counted-and-timed series for the per-request families (HTTP requests, tool calls), cheaper on
 * the hot path than prom-client's own Counter and Histogram: those validate and hash the label
 * set on every call (a few µs of a ~40 µs call); here a call is one Map lookup by the joined label
 * values and a few additions. The figures are handed to prom-client's registry at scrape time
 * through the metric interface it reads (`name`, `help`, `type`, `get()`), so the exposition —
 * Prometheus text or OpenMetrics — is prom-client's.
 */
import type client from 'prom-client';

/** One label set's figures: requests counted, seconds summed, and a count per bucket. */
export class Cell {
  count = 0;
  sum = 0;
  readonly buckets: number[];

  constructor(
    readonly labels: Readonly<Record<string, string>>,
    private readonly bounds: readonly number[],
  ) {
    this.buckets = bounds.map(() => 0);
  }

  /** One event that took `seconds`. */
  observe(seconds: number): void {
    this.count++;
    this.sum += seconds;
    const b = this.bounds;
    for (let i = 0; i < b.length; i++) {
      if (seconds <= b[i]!) {
        this.buckets[i]!++;
        return;
      }
    }
  }
}

type Values = Array<{ labels: Record<string, string | number>; value: number; metricName?: string }>;

/** What prom-client's registry reads of a metric. */
interface RegistryMetric {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  aggregator: 'sum';
  get(): Promise<{ name: string; help: string; type: string; values: Values; aggregator: 'sum' }>;
}

/**
 * A family counted and timed at once: `<counter>` (a counter of events) and `<histogram>` (their
 * durations) over the same label sets, e.g. `http_requests_total` and `http_request_duration_seconds`.
 */
export class TimedFamily {
  readonly #cells = new Map<string, Cell>();
  /** The same cells by label value, level by level (the hot path's lookup). */
  readonly #cells3 = new Map<string, Map<string, Map<string, Cell>>>();

  constructor(
    registry: client.Registry<client.RegistryContentType>,
    counter: { name: string; help: string },
    histogram: { name: string; help: string },
    private readonly labelNames: readonly string[],
    private readonly bounds: readonly number[],
  ) {
    if (labelNames.length !== 3) throw new Error('TimedFamily: three labels');
    const cells = this.#cells;
    const counterMetric: RegistryMetric = {
      ...counter,
      type: 'counter',
      aggregator: 'sum',
      async get() {
        return { name: this.name, help: this.help, type: 'counter', aggregator: 'sum', values: [...cells.values()].map((c) => ({ labels: { ...c.labels }, value: c.count })) };
      },
    };
    const histogramMetric: RegistryMetric = {
      ...histogram,
      type: 'histogram',
      aggregator: 'sum',
      async get() {
        const values: Values = [];
        for (const c of cells.values()) {
          let acc = 0;
          bounds.forEach((le, i) => {
            acc += c.buckets[i]!;
            values.push({ labels: { ...c.labels, le }, value: acc, metricName: `${this.name}_bucket` });
          });
          values.push({ labels: { ...c.labels, le: '+Inf' }, value: c.count, metricName: `${this.name}_bucket` });
          values.push({ labels: { ...c.labels }, value: c.sum, metricName: `${this.name}_sum` });
          values.push({ labels: { ...c.labels }, value: c.count, metricName: `${this.name}_count` });
        }
        return { name: this.name, help: this.help, type: 'histogram', aggregator: 'sum', values };
      },
    };
    registry.registerMetric(counterMetric as unknown as client.Metric);
    registry.registerMetric(histogramMetric as unknown as client.Metric);
  }

  /**
   * The cell of three label values (in labelNames' order), made on first use: nested maps, so a
   * request allocates nothing to find its cell (no array, no joined key).
   */
  cell(a: string, b: string, c: string): Cell {
    let byB = this.#cells3.get(a);
    if (!byB) this.#cells3.set(a, (byB = new Map()));
    let byC = byB.get(b);
    if (!byC) byB.set(b, (byC = new Map()));
    let cell = byC.get(c);
    if (!cell) {
      const values = [a, b, c];
      const labels: Record<string, string> = {};
      this.labelNames.forEach((n, i) => (labels[n] = values[i]!));
      this.#cells.set(values.join('\u0000'), (cell = new Cell(labels, this.bounds)));
      byC.set(c, cell);
    }
    return cell;
  }
}

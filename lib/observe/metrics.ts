/**
 * A small Prometheus registry: counters, histograms and callback gauges with labels, rendered
 * in the text exposition format (HELP and TYPE for every family). No dependency: the format is
 * a few lines of string building, and the hot path is one Map lookup per observation.
 *
 * @module
 */

/** A metric's label values by label name. */
export type Labels = Record<string, string>;

function escapeLabel(value: string): string {
  return value.replaceAll("\\", "\\\\").replaceAll('"', '\\"').replaceAll("\n", "\\n");
}

function labelText(names: readonly string[], values: readonly string[], extra = ""): string {
  const parts = names.map((name, i) => `${name}="${escapeLabel(values[i])}"`);
  if (extra !== "") parts.push(extra);
  return parts.length === 0 ? "" : `{${parts.join(",")}}`;
}

function numberText(n: number): string {
  if (n === Infinity) return "+Inf";
  if (n === -Infinity) return "-Inf";
  return String(n);
}

/** Which series to write: given a family's label names and one series' values. */
export type SeriesFilter = (names: readonly string[], values: readonly string[]) => boolean;

/** A metric family: one name, one help line, many labelled series, written as text. */
export interface Family {
  /**
   * Writes the family's exposition text into `out`, only the series `keep` accepts; `queues`
   * are the queues a counter by queue alone writes a series for even before it first counts.
   */
  render(out: string[], keep?: SeriesFilter, queues?: readonly string[]): void;
}

/** A monotonically increasing count, by label values. */
export class Counter implements Family {
  readonly #values = new Map<string, { labels: string[]; value: number }>();

  /** Use {@linkcode Registry.counter}. */
  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[] = [],
  ) {}

  /** Adds `n` (default 1) for the given label values (in `labelNames` order). */
  inc(labels: readonly string[] = [], n = 1): void {
    const key = labels.join("\u0000");
    const entry = this.#values.get(key);
    if (entry === undefined) this.#values.set(key, { labels: [...labels], value: n });
    else entry.value += n;
  }

  /** The current value for the label values. */
  get(labels: readonly string[] = []): number {
    return this.#values.get(labels.join("\u0000"))?.value ?? 0;
  }

  /**
   * Writes the family (the series `keep` accepts, when given). A counter that has not counted
   * yet still writes 0: without labels, its one series; by queue alone, one series for each of
   * `queues`. A series that first appears at its first count hides that count from `increase()`
   * and `rate()`, so an alert on the first dead letter or the first failed commit would never
   * fire.
   */
  render(out: string[], keep?: SeriesFilter, queues?: readonly string[]): void {
    out.push(`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} counter`);
    for (const { labels, value } of this.#values.values()) {
      if (keep !== undefined && !keep(this.labelNames, labels)) continue;
      out.push(`${this.name}${labelText(this.labelNames, labels)} ${numberText(value)}`);
    }
    if (this.labelNames.length === 0) {
      if (this.#values.size === 0) out.push(`${this.name} 0`);
    } else if (
      queues !== undefined && this.labelNames.length === 1 && this.labelNames[0] === "queue"
    ) {
      for (const queue of queues) {
        if (!this.#values.has(queue)) out.push(`${this.name}${labelText(["queue"], [queue])} 0`);
      }
    }
  }
}

/** A distribution of observed values in cumulative buckets, by label values. */
export class Histogram implements Family {
  readonly #series = new Map<
    string,
    { labels: string[]; counts: number[]; sum: number; n: number }
  >();

  /** Use {@linkcode Registry.histogram}. `buckets` are upper bounds, ascending. */
  constructor(
    readonly name: string,
    readonly help: string,
    readonly buckets: readonly number[],
    readonly labelNames: readonly string[] = [],
  ) {}

  /** Records one value for the given label values. */
  observe(labels: readonly string[], value: number): void {
    const key = labels.join("\u0000");
    let series = this.#series.get(key);
    if (series === undefined) {
      series = {
        labels: [...labels],
        counts: new Array(this.buckets.length).fill(0),
        sum: 0,
        n: 0,
      };
      this.#series.set(key, series);
    }
    // Non-cumulative per bucket here; rendering makes them cumulative.
    let i = 0;
    while (i < this.buckets.length && value > this.buckets[i]) i++;
    if (i < this.buckets.length) series.counts[i]++;
    series.sum += value;
    series.n++;
  }

  /** Writes the family (the series `keep` accepts, when given). */
  render(out: string[], keep?: SeriesFilter): void {
    out.push(`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`);
    for (const s of this.#series.values()) {
      if (keep !== undefined && !keep(this.labelNames, s.labels)) continue;
      let cumulative = 0;
      for (let i = 0; i < this.buckets.length; i++) {
        cumulative += s.counts[i];
        out.push(
          `${this.name}_bucket${
            labelText(this.labelNames, s.labels, `le="${numberText(this.buckets[i])}"`)
          } ${cumulative}`,
        );
      }
      out.push(`${this.name}_bucket${labelText(this.labelNames, s.labels, 'le="+Inf"')} ${s.n}`);
      out.push(`${this.name}_sum${labelText(this.labelNames, s.labels)} ${numberText(s.sum)}`);
      out.push(`${this.name}_count${labelText(this.labelNames, s.labels)} ${s.n}`);
    }
  }
}

/**
 * A family whose samples are read when rendering: a gauge, or a counter kept elsewhere (a count
 * that only grows, read from where it is counted).
 */
class CallbackFamily implements Family {
  constructor(
    readonly name: string,
    readonly help: string,
    readonly read: () => [Labels, number][],
    readonly type: "gauge" | "counter",
  ) {}

  render(out: string[]): void {
    out.push(`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} ${this.type}`);
    for (const [labels, value] of this.read()) {
      const names = Object.keys(labels);
      out.push(`${this.name}${labelText(names, names.map((n) => labels[n]))} ${numberText(value)}`);
    }
  }
}

/** Buckets for latencies in seconds, 100 µs to 60 s. */
export const LATENCY_BUCKETS: readonly number[] = [
  0.0001,
  0.00025,
  0.0005,
  0.001,
  0.0025,
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.25,
  0.5,
  1,
  2.5,
  5,
  10,
  30,
  60,
];

/** A set of metric families rendered together. */
export class Registry {
  readonly #families: Family[] = [];
  readonly #names = new Set<string>();

  #add<T extends Family & { name: string }>(family: T): T {
    if (this.#names.has(family.name)) throw new Error(`Metric ${family.name} is registered twice`);
    this.#names.add(family.name);
    this.#families.push(family);
    return family;
  }

  /** Registers a counter. */
  counter(name: string, help: string, labelNames: readonly string[] = []): Counter {
    return this.#add(new Counter(name, help, labelNames));
  }

  /** Registers a histogram. */
  histogram(
    name: string,
    help: string,
    buckets: readonly number[],
    labelNames: readonly string[] = [],
  ): Histogram {
    return this.#add(new Histogram(name, help, buckets, labelNames));
  }

  /** Registers a gauge read at render time. */
  gauge(name: string, help: string, read: () => [Labels, number][]): void {
    this.#add(new CallbackFamily(name, help, read, "gauge"));
  }

  /** Registers a counter kept elsewhere, read at render time. */
  countedElsewhere(name: string, help: string, read: () => [Labels, number][]): void {
    this.#add(new CallbackFamily(name, help, read, "counter"));
  }

  /**
   * The Prometheus text exposition of every family (of the series `keep` accepts); counters by
   * queue write 0 for each of `queues` they have not counted yet.
   */
  render(keep?: SeriesFilter, queues?: readonly string[]): string {
    const out: string[] = [];
    for (const family of this.#families) family.render(out, keep, queues);
    return out.join("\n") + "\n";
  }
}

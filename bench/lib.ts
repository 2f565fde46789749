/**
 * Benchmark reporting: every figure is printed as one JSON line when measured and
 * in a table at the end. Benchmarks are never run as tests and nothing asserts a time.
 */

/** One measured figure. */
export interface Figure {
  /** Stable identifier, e.g. "mem.search_hard.p50.100k". */
  name: string;
  value: number;
  unit: string;
  /** Human-readable target, e.g. "<= 5 ms". */
  target?: string;
  /** Whether the target is met, when there is one. */
  ok?: boolean;
  /** Anything else worth keeping (sample counts, comparisons). */
  details?: Record<string, unknown>;
}

const figures: Figure[] = [];

/** Records a figure and prints its JSON line. */
export function record(figure: Figure): void {
  const rounded = { ...figure, value: Math.round(figure.value * 1000) / 1000 };
  figures.push(rounded);
  process.stdout.write(
    `${JSON.stringify({ figure: rounded.name, value: rounded.value, unit: rounded.unit, target: rounded.target, ok: rounded.ok, ...rounded.details })}\n`,
  );
}

/** Figures recorded so far. */
export function recorded(): readonly Figure[] {
  return figures;
}

/** The p-th percentile (0–100) of `values`, by nearest rank. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] as number;
}

/** Times `fn` once in milliseconds. */
export async function timeMs(fn: () => unknown): Promise<number> {
  const started = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - started) / 1e6;
}

/** Prints every recorded figure as an aligned table. */
export function printTable(): void {
  const rows = figures.map((f) => [f.name, `${f.value} ${f.unit}`, f.target ?? '', f.ok === undefined ? '' : f.ok ? 'ok' : 'MISSED']);
  const header = ['figure', 'value', 'target', ''];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string =>
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  process.stdout.write(`\n${line(header)}\n${line(widths.map((w) => '-'.repeat(w)))}\n${rows.map(line).join('\n')}\n`);
}

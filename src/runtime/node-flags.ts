/**
 * Node/V8 flags each service runs with, under `zino up` (the supervisor's
 * command line for each child) and under systemd (`Environment=NODE_OPTIONS=` in
 * each unit; test/systemd/units.test.ts checks the two agree).
 *
 * `--max-semi-space-size` (MB) caps V8's young generation, which otherwise grows
 * to 3 × 16 MB per process under load and keeps it. Measured with
 * `npm run bench suite` (docs/benchmarks.md, issue 18), PSS after the benchmark:
 * - 1 MB for all but rtr: the seven fell by about a third against the default,
 *   with no loss in throughput or latency beyond the run-to-run noise; 2 MB cost
 *   daemon, agr and mem 1–7 MB each, 3 MB 5–11 MB (objects of a request that
 *   outlive two scavenges are promoted either way, and the young generation is
 *   larger). `zino serve http` runs with the same 1 MB.
 * - 2 MB for rtr: rtr turns each SSE event into several short-lived objects; at
 *   1 MB enough of them survive two scavenges to grow its old generation (61 MB
 *   after 200 concurrent streams), at 2–4 MB it stays near 45–50 MB, and from
 *   8 MB the young generation itself costs more (59–79 MB).
 *
 * A `NODE_OPTIONS` an operator sets is read first, so a flag here wins over the
 * same flag there under `zino up`; in a unit, an `Environment=`/`EnvironmentFile=`
 * set later replaces this one.
 */
const DEFAULT_FLAGS: readonly string[] = ['--max-semi-space-size=1'];
const FLAGS: Readonly<Record<string, readonly string[]>> = { rtr: ['--max-semi-space-size=2'] };

/** The flags `name` (a service, or `http`) runs with. */
export function serviceNodeFlags(name: string): readonly string[] {
  return FLAGS[name] ?? DEFAULT_FLAGS;
}

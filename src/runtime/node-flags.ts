/**
 * Node/V8 flags every service runs with, under `zino up` (the supervisor's
 * command line for each child) and under systemd (`Environment=NODE_OPTIONS=` in
 * each unit; test/systemd/units.test.ts checks the two agree).
 *
 * `--max-semi-space-size=1` (MB): V8's young generation grows to 3 × 16 MB per
 * process under load and keeps it; capped at 1 MB, a short-lived object that
 * survives two scavenges moves to the old generation instead. Measured with
 * `npm run bench` (docs/benchmarks.md, issue 18): the PSS of the seven after the
 * benchmark fell by about a third, with no loss in throughput or latency beyond
 * the run-to-run noise. A `NODE_OPTIONS` an operator sets is read first, so a flag
 * here wins over the same flag there under `zino up`; in a unit, an
 * `Environment=`/`EnvironmentFile=` set later replaces this one.
 */
export const SERVICE_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=1'];

/**
 * Node/V8 flags each service runs with, under `zino up` (the supervisor's
 * command line for each child) and under systemd (the command line of each unit's
 * `ExecStart=`).
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
 * - `--initial-old-space-size=16 --heap-growing-percent=100` for rtr: after a full
 *   collection V8 lets the old generation grow by a factor it picks from how fast the
 *   process allocates against how fast it collects, up to 4. rtr's live heap is small
 *   (about 8 MB) and, since its connection from agr is kept (round 16), it allocates
 *   fast enough for V8 to pick a large factor: its old generation grew to 34 MB of
 *   mostly garbage before the next collection, and rtr held 57–60 MB right after the
 *   benchmark's load in seven runs of seven (38–39 MB before). A factor of 2 from the
 *   start brings it back to about 41 MB (docs/benchmarks.md, round 17), for one more
 *   collection of a few ms every few seconds under load. Not for mem: a large store
 *   (100,000 memories) is a large live heap, and the same flags made its index build
 *   20–30 % slower and its searches 15 % slower.
 *
 * They go on the command line, under `zino up` and in each systemd unit's
 * `ExecStart=` (test/systemd/units.test.ts checks the two agree): `NODE_OPTIONS`
 * refuses the last two. A `NODE_OPTIONS` an operator sets is read first, so a flag
 * here wins over the same flag there.
 */
const DEFAULT_FLAGS: readonly string[] = ['--max-semi-space-size=1'];
const FLAGS: Readonly<Record<string, readonly string[]>> = {
  rtr: ['--max-semi-space-size=2', '--initial-old-space-size=16', '--heap-growing-percent=100'],
};

/** The flags `name` (a service, or `http`) runs with. */
export function serviceNodeFlags(name: string): readonly string[] {
  return FLAGS[name] ?? DEFAULT_FLAGS;
}

/**
 * `npm run bench [suite...]`: runs the benchmark suites (all by default), printing
 * one JSON line per figure and a table at the end.
 */
import { printTable } from './lib.js';

/** Each suite module exports `run(): Promise<void>`. */
const SUITES: Record<string, () => Promise<{ run: () => Promise<void> }>> = {
  hops: () => import('./hops.js'),
  suite: () => import('./suite.js'),
  mem: () => import('./mem.js'),
  stall: () => import('./stall.js'),
};

const wanted = process.argv.slice(2);
const unknown = wanted.filter((name) => !(name in SUITES));
if (unknown.length > 0) {
  process.stderr.write(`unknown benchmark suite: ${unknown.join(', ')} (have: ${Object.keys(SUITES).join(', ')})\n`);
  process.exit(2);
}
for (const name of wanted.length > 0 ? wanted : Object.keys(SUITES)) {
  process.stderr.write(`== ${name}\n`);
  const suite = await SUITES[name]!();
  await suite.run();
}
printTable();

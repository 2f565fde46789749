/**
 * The harness that tests and benchmarks start services with runs each one as `zino up` and the
 * systemd units do: with its own Node flags on the command line, before the script.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serviceNodeFlags } from '../../src/runtime/node-flags.js';
import { CLI_PATH } from '../../src/testing/process.js';
import { startServices, type ServiceGroup } from '../../src/testing/suite.js';
import { tempDir } from '../helpers/util.js';

let group: ServiceGroup;
let cleanup: () => void;

beforeAll(async () => {
  const temp = tempDir('zstart');
  cleanup = temp.cleanup;
  group = await startServices(['rtr', 'mem'], temp.dir);
});
afterAll(async () => {
  await group.stop();
  cleanup();
});

/** The command line of a running process, from /proc. */
function argvOf(pid: number | undefined): string[] {
  return readFileSync(`/proc/${String(pid)}/cmdline`, 'utf8')
    .split('\0')
    .filter(Boolean);
}

describe('startService', () => {
  it('gives each service the Node flags it runs with in production, between node and the script', () => {
    // rtr's flags differ from mem's: a harness that gave every service the same ones would fail here.
    expect(serviceNodeFlags('rtr')).not.toEqual(serviceNodeFlags('mem'));
    for (const name of ['rtr', 'mem'] as const) {
      const argv = argvOf(group.get(name).child.pid);
      expect(argv[0], name).toBe(process.execPath);
      expect(argv.slice(1, argv.indexOf(CLI_PATH)), name).toEqual(serviceNodeFlags(name));
      expect(argv.slice(argv.indexOf(CLI_PATH) + 1, argv.indexOf(CLI_PATH) + 3), name).toEqual(['serve', name]);
    }
  });
});

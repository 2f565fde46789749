/**
 * The rendered units pass `systemd-analyze verify` without a word, and
 * `systemd-analyze security --offline=yes` scores each within issue 7's
 * threshold. Skipped (with a reason) where systemd-analyze is missing, never in CI.
 */
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HTTP_UNIT, KNOWN_UNITS, RUNNER_UNIT, SERVICE_UNITS } from '../../src/deploy/layout.js';
import { renderHttpUnit, renderUnits } from '../../src/deploy/render.js';
import { PACKAGE_ROOT } from '../../src/testing/paths.js';
import { tempDir } from '../helpers/util.js';
import { ANALYZE_AVAILABLE, MAX_EXPOSURE, RUN_ANALYZE, analyze, exposure } from './helpers.js';

if (!RUN_ANALYZE) console.warn('test/systemd/analyze.test.ts: skipped: systemd-analyze is not installed (apt-get install systemd); CI always runs it');

let dir: string;
let cleanup: () => void;
beforeAll(() => {
  ({ dir, cleanup } = tempDir('zsa'));
  mkdirSync(dir, { recursive: true });
  // The node running the tests stands for the installed one: verify checks that ExecStart's binary exists.
  const vars = { node: process.execPath, prefix: '/opt/zino' };
  for (const unit of [...renderUnits(PACKAGE_ROOT, vars), renderHttpUnit(PACKAGE_ROOT, vars)]) writeFileSync(path.join(dir, unit.name), unit.text);
});
afterAll(() => cleanup());

describe('systemd-analyze on the rendered units', () => {
  it.runIf(RUN_ANALYZE)('finds systemd-analyze (CI installs the systemd package)', () => {
    expect(ANALYZE_AVAILABLE, 'systemd-analyze is missing: add "systemd" to .ci/debian-packages').toBe(true);
  });

  it.runIf(RUN_ANALYZE)('verify reports nothing for any unit', () => {
    const { status, output } = analyze(['verify', '--no-pager', ...KNOWN_UNITS], dir);
    expect(output.trim()).toBe('');
    expect(status).toBe(0);
  });

  for (const unit of [...SERVICE_UNITS, HTTP_UNIT, RUNNER_UNIT]) {
    const max = MAX_EXPOSURE[unit] ?? 0;
    it.runIf(RUN_ANALYZE)(`security scores ${unit} at most ${max.toFixed(1)}`, () => {
      const { score, output } = exposure(path.join(dir, unit));
      expect(score, output).toBeLessThanOrEqual(max);
    });
  }

  it.runIf(RUN_ANALYZE)('security scores zino-exc.service with the bubblewrap drop-in (older kernels) at most 2.4, and verify accepts it', () => {
    const withDropIn = path.join(dir, 'bubblewrap');
    mkdirSync(path.join(withDropIn, 'zino-exc.service.d'), { recursive: true });
    copyFileSync(path.join(dir, 'zino-exc.service'), path.join(withDropIn, 'zino-exc.service'));
    copyFileSync(path.join(PACKAGE_ROOT, 'systemd', 'zino-exc-bubblewrap.conf'), path.join(withDropIn, 'zino-exc.service.d', 'bubblewrap.conf'));
    const plain = exposure(path.join(dir, 'zino-exc.service')).score;
    const { score, output } = exposure(path.join(withDropIn, 'zino-exc.service'));
    // The drop-in is read: it lets bwrap create namespaces and mount, which costs exposure.
    expect(score, output).toBeGreaterThan(plain);
    expect(score, output).toBeLessThanOrEqual(2.4);
    expect(output).toMatch(/✗ RestrictNamespaces=~user/);
  });

  it.runIf(RUN_ANALYZE)('security finds the HTTP unit limited to loopback IP traffic', () => {
    const { output } = exposure(path.join(dir, HTTP_UNIT));
    expect(output.split('\n').find((line) => line.includes('IPAddressDeny='))).toMatch(/only localhost entries/);
  });

  it.runIf(RUN_ANALYZE)('security finds no Internet sockets allowed in any unit but rtr', () => {
    for (const unit of SERVICE_UNITS) {
      const { output } = exposure(path.join(dir, unit));
      const inet = output.split('\n').find((line) => line.includes('RestrictAddressFamilies=~AF_(INET|INET6)')) ?? '';
      if (unit === 'zino-rtr.service') expect(inet).toMatch(/✗/);
      else expect(inet, unit).toMatch(/✓/);
    }
  });
});

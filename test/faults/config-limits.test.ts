/**
 * Huge config values must not invert their meaning: past Node's 2^31−1 ms timer
 * limit a timeout fires at once, so `[limits] request_read_timeout_ms = 3000000000`
 * dropped every connection and `[exc] timeout = 2500000` "timed out" every run in
 * 84 ms. Every duration and size has a maximum; a value past it stops the process
 * with exit 78 and the key named.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, SCHEMA, resolveConfig, type AnyKeySpec } from '../../src/runtime/index.js';
import { MAX_DURATION_MS, MAX_DURATION_S } from '../../src/runtime/config/schema.js';
import { CLI_PATH } from '../../src/testing/paths.js';
import { tempDir } from '../helpers/util.js';

/** Node's largest timer delay. */
const NODE_TIMER_MAX_MS = 2 ** 31 - 1;
/** The largest margin a service adds to a configured duration (agr waits for exc 15 s longer). */
const LARGEST_MARGIN_MS = 15_000;

const sections = SCHEMA as unknown as Record<string, Record<string, AnyKeySpec>>;
const numberKeys = Object.entries(sections).flatMap(([section, keys]) =>
  Object.entries(keys).flatMap(([key, spec]) => (spec.kind === 'integer' || spec.kind === 'number' ? [{ section, key, spec }] : [])),
);
/** Keys in seconds (the contract's `timeout`s); every other duration is in `_ms`. */
const SECONDS_KEYS = ['rtr.timeout', 'exc.timeout'];

function resolve(section: string, key: string, value: number): unknown {
  return resolveConfig({ [section]: { [key]: value } }, { file: 'ZINO.toml', baseDir: '/', env: {} });
}

describe('config maxima', () => {
  it('every number key has a maximum, and every duration fits a Node timer with its margin', () => {
    for (const { section, key, spec } of numberKeys) {
      const id = `${section}.${key}`;
      expect(spec.max, `[${section}] ${key} has no maximum`).toBeTypeOf('number');
      const max = spec.max as number;
      if (key.endsWith('_ms')) expect(max + LARGEST_MARGIN_MS, id).toBeLessThanOrEqual(NODE_TIMER_MAX_MS);
      if (SECONDS_KEYS.includes(id)) expect(max * 1000 + LARGEST_MARGIN_MS, id).toBeLessThanOrEqual(NODE_TIMER_MAX_MS);
    }
    expect(MAX_DURATION_S * 1000).toBe(MAX_DURATION_MS);
  });

  it.each(numberKeys.map(({ section, key, spec }) => [`[${section}] ${key}`, section, key, spec] as const))(
    '%s: accepts its maximum, rejects one more naming the key',
    (_name, section, key, spec) => {
      const max = spec.max as number;
      expect(() => resolve(section, key, max)).not.toThrow();
      expect(() => resolve(section, key, max + 1)).toThrow(ConfigError);
      expect(() => resolve(section, key, max + 1)).toThrow(`ZINO.toml: [${section}] ${key} must be at most ${max}, got ${max + 1}`);
    },
  );

  it("rejects the issue's values", () => {
    expect(() => resolve('limits', 'request_read_timeout_ms', 3_000_000_000)).toThrow(
      `[limits] request_read_timeout_ms must be at most ${MAX_DURATION_MS}, got 3000000000`,
    );
    expect(() => resolve('exc', 'timeout', 2_500_000)).toThrow(`[exc] timeout must be at most ${MAX_DURATION_S}, got 2500000`);
  });

  it('a real `zino serve` exits 78 naming the key', () => {
    const { dir, cleanup } = tempDir('zmax');
    try {
      const file = path.join(dir, 'ZINO.toml');
      writeFileSync(file, `[exc]\nsocket = "${dir}/exc.sock"\n\n[limits]\nrequest_read_timeout_ms = 3000000000\n`);
      const result = spawnSync(process.execPath, [CLI_PATH, 'serve', 'exc', '--config', file], {
        encoding: 'utf8',
        timeout: 30_000,
        env: { ...process.env, ZINO_CONFIG: '', ZINO_DIR: '' },
      });
      expect(result.stderr).toContain(`${file}: [limits] request_read_timeout_ms must be at most ${MAX_DURATION_MS}, got 3000000000`);
      expect(result.status).toBe(78);
    } finally {
      cleanup();
    }
  });
});

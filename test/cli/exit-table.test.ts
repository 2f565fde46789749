/** The exit-status table in docs/operations.md is the one in src/runtime/exit.ts (issue 15, point 8). */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXIT, EXIT_TABLE, ZinoError, exitStatusFor } from '../../src/runtime/index.js';

const doc = readFileSync(path.join(__dirname, '../../docs/operations.md'), 'utf8');

describe('the exit-status table', () => {
  it('is printed in docs/operations.md row by row', () => {
    const rows = doc.split('\n').filter((line) => /^\| \d+ \| `[A-Z_]+` \| /.test(line));
    expect(rows).toEqual(EXIT_TABLE.map((r) => `| ${r.status} | \`${r.name}\` | ${r.meaning} |`));
  });

  it('lists every status once', () => {
    expect(EXIT_TABLE.map((r) => r.status).sort((a, b) => a - b)).toEqual(Object.values(EXIT).sort((a, b) => a - b));
  });

  it('maps error codes, not messages: unreachable 69, configuration 78, cancelled 130, else 1', () => {
    expect(exitStatusFor(new ZinoError('UPSTREAM_UNAVAILABLE', 'x'))).toBe(69);
    expect(exitStatusFor(new ZinoError('CONNECTION_CLOSED', 'x'))).toBe(69);
    expect(exitStatusFor(new ZinoError('TIMEOUT', 'x'))).toBe(69);
    expect(exitStatusFor(new ZinoError('NOT_CONFIGURED', 'x'))).toBe(78);
    expect(exitStatusFor(new ZinoError('CANCELLED', 'x'))).toBe(130);
    expect(exitStatusFor(new ZinoError('INVALID_REQUEST', 'cannot reach'))).toBe(1);
    expect(exitStatusFor(new Error('anything'))).toBe(1);
  });
});

/**
 * Permissions: every socket is 0660 in a 0750 directory; a user in the socket's
 * group can connect, any other user cannot (checked when the test can switch uids).
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, statSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERVICE_NAMES } from '../../src/runtime/index.js';
import { record, startFaultSuite, type FaultSuite } from './harness.js';

const ROOT = process.getuid?.() === 0;

let fs: FaultSuite;
beforeAll(async () => {
  fs = await startFaultSuite('zperm');
  // Let anyone traverse the temp dir, so only the socket directory and the sockets decide.
  chmodSync(fs.dir, 0o755);
});
afterAll(async () => {
  await fs.close();
});

/** Tries to connect to the daemon as `uid`/`gid`; returns "connected" or the error code. */
function connectAs(uid: number, gid: number): string {
  const script = `require('net').createConnection(${JSON.stringify(fs.socket('daemon'))}).on('connect', () => { console.log('connected'); process.exit(0); }).on('error', (e) => { console.log(e.code); process.exit(0); });`;
  const result = spawnSync(process.execPath, ['-e', script], { uid, gid, encoding: 'utf8', timeout: 10_000 });
  return result.stdout.trim();
}

describe('socket permissions', () => {
  it('are 0660 sockets in a 0750 directory', () => {
    expect(statSync(path.join(fs.dir, 'run')).mode & 0o777).toBe(0o750);
    for (const name of SERVICE_NAMES) expect(statSync(fs.socket(name)).mode & 0o777, name).toBe(0o660);
  });

  // Switching uids needs root; CI runs as root, so there it must run.
  it.runIf(ROOT || process.env.CI)('let the socket group in and keep other users out', () => {
    const group = statSync(fs.socket('daemon')).gid;
    const outsider = connectAs(65534, 65534);
    const member = connectAs(65534, group);
    record('permissions.other_user', outsider);
    record('permissions.group_member', member);
    expect(outsider).toBe('EACCES');
    expect(member).toBe('connected');
  });
});

/**
 * Who can connect: a service's socket is 0660 in a 0750 directory, both of the
 * service's group (zino under systemd). Here, as root, two throwaway users are
 * made, one in a throwaway group that stands for zino; a real `zino serve sys`
 * listens in a temp dir handed to that group; the member's ping is answered and
 * the other user gets EACCES. Skipped when not root, except in CI (which runs as
 * root), where not being able to run it is a failure.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SOCKET_MODE } from '../../src/runtime/index.js';
import { startService, writeTestConfig } from '../../src/testing/suite.js';
import { tempDir } from '../helpers/util.js';

const IS_ROOT = process.geteuid?.() === 0;
const TOOLS = ['useradd', 'userdel', 'groupadd', 'groupdel', 'runuser', 'getent'];
const hasTool = (tool: string): boolean => spawnSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' }).status === 0;

if (!IS_ROOT && !process.env.CI) console.warn('test/systemd/group-access.test.ts: skipped: creating users needs root (CI runs as root)');

/** Pings the socket given as argv[1] with one frame; prints the reply, or ERR <code>. */
const PING_SCRIPT = `
const net = require('node:net');
const socket = net.createConnection(process.argv[1]);
socket.on('connect', () => {
  const body = Buffer.from(JSON.stringify({ type: 'ping' }));
  const head = Buffer.alloc(4);
  head.writeUInt32BE(body.length);
  socket.write(Buffer.concat([head, body]));
});
let data = Buffer.alloc(0);
socket.on('data', (chunk) => {
  data = Buffer.concat([data, chunk]);
  if (data.length >= 4 && data.length >= 4 + data.readUInt32BE(0)) {
    console.log(data.subarray(4, 4 + data.readUInt32BE(0)).toString());
    socket.destroy();
  }
});
socket.on('error', (err) => { console.log('ERR ' + err.code); process.exitCode = 1; });
`;

function sh(argv: string[]): { status: number | null; out: string } {
  const [command, ...args] = argv;
  const result = spawnSync(command ?? 'false', args, { encoding: 'utf8' });
  return { status: result.status, out: `${result.stdout}${result.stderr}`.trim() };
}

function must(argv: string[]): void {
  const { status, out } = sh(argv);
  if (status !== 0) throw new Error(`${argv.join(' ')} failed (${String(status)}): ${out}`);
}

/** Runs the ping as `user`; returns what it printed. */
function pingAs(user: string, socket: string): string {
  return sh(['runuser', '-u', user, '--', process.execPath, '-e', PING_SCRIPT, socket]).out;
}

describe('socket access by group', () => {
  it.runIf(IS_ROOT || process.env.CI)('lets a member of the socket group connect and refuses another user with EACCES', async () => {
    if (!IS_ROOT) throw new Error('this test must run as root in CI: it creates throwaway users');
    const missing = TOOLS.filter((tool) => !hasTool(tool));
    if (missing.length > 0) throw new Error(`missing ${missing.join(', ')} (package passwd / util-linux)`);

    const tag = Math.random().toString(36).slice(2, 8);
    const group = `ztg${tag}`;
    const member = `ztm${tag}`;
    const outsider = `zto${tag}`;
    const { dir, cleanup } = tempDir('zga');
    const created: string[] = [];
    let service: Awaited<ReturnType<typeof startService>> | undefined;
    try {
      must(['groupadd', '--system', group]);
      must(['useradd', '--system', '--no-create-home', '--shell', '/usr/sbin/nologin', '--groups', group, member]);
      created.push(member);
      must(['useradd', '--system', '--no-create-home', '--shell', '/usr/sbin/nologin', outsider]);
      created.push(outsider);
      if (sh(['runuser', '-u', outsider, '--', 'test', '-x', process.execPath]).status !== 0) {
        throw new Error(`${process.execPath} is not executable by other users: install node system-wide for this test`);
      }

      // Both users may enter the temp dir; what protects the socket is its own directory and mode.
      chmodSync(dir, 0o755);
      const { file } = writeTestConfig(dir);
      service = await startService('sys', file);
      const runDir = path.dirname(service.socket);
      expect(statSync(runDir).mode & 0o777).toBe(0o750);
      expect(statSync(service.socket).mode & 0o777).toBe(SOCKET_MODE);

      // What systemd gives the zino user: the directory and the socket in its group.
      const gid = Number(sh(['getent', 'group', group]).out.split(':')[2]);
      chownSync(runDir, 0, gid);
      chownSync(service.socket, 0, gid);

      expect(pingAs(member, service.socket)).toBe('{"type":"pong"}');
      expect(pingAs(outsider, service.socket)).toBe('ERR EACCES');
    } finally {
      if (service) expect(await service.stop()).toEqual({ code: 0, signal: null });
      for (const user of created) sh(['userdel', user]);
      sh(['groupdel', group]);
      cleanup();
    }
    // Nothing of the throwaway accounts is left behind.
    for (const name of [member, outsider]) expect(sh(['getent', 'passwd', name]).status).not.toBe(0);
    expect(sh(['getent', 'group', group]).status).not.toBe(0);
  });
});

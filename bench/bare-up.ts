/**
 * The cold start's floor (`bench/suite.ts`, `cold_start.floor.*`): what starting seven Node
 * processes costs on this machine at this moment, with none of the suite's code. A parent
 * `node` (as `zino up` is) spawns seven children of this same file the way `zino up` spawns the
 * services (the same node flags, stdin a pipe, stdout ignored, stderr inherited); each child
 * listens on its Unix socket, as a service does, and answers every connection's first frame
 * with a framed `{"type":"pong"}`. The bench waits for the seven as it waits for the suite, so
 * the suite's start and this one can be read side by side, like the hop floor beside the
 * per-request figures.
 *
 * Usage: node bare-up.js up SOCKET... (stops its children on SIGINT/SIGTERM)
 *        node bare-up.js serve SOCKET
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { serviceNodeFlags } from '../src/runtime/node-flags.js';

const [role, ...sockets] = process.argv.slice(2);

if (role === 'serve' && sockets.length === 1) serveOne(sockets[0] as string);
else if (role === 'up' && sockets.length > 0) up(sockets);
else {
  process.stderr.write('usage: bare-up up SOCKET... | bare-up serve SOCKET\n');
  process.exit(2);
}

function up(paths: string[]): void {
  const self = fileURLToPath(import.meta.url);
  const children: ChildProcess[] = paths.map((socket) =>
    spawn(process.execPath, [...serviceNodeFlags('sys'), self, 'serve', socket], { stdio: ['pipe', 'ignore', 'inherit'] }),
  );
  const stop = (): void => {
    let left = children.length;
    for (const child of children) {
      if (child.exitCode !== null || child.signalCode !== null) left--;
      else
        child.once('exit', () => {
          if (--left === 0) process.exit(0);
        });
      child.kill('SIGTERM');
    }
    if (left === 0) process.exit(0);
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

function serveOne(socket: string): void {
  const body = Buffer.from(JSON.stringify({ type: 'pong' }));
  const pong = Buffer.concat([Buffer.alloc(4), body]);
  pong.writeUInt32BE(body.length, 0);
  const server = net.createServer((connection) => {
    let head = Buffer.alloc(0);
    connection.on('error', () => undefined);
    connection.on('data', (data: Buffer) => {
      head = Buffer.concat([head, data]);
      // One request per connection: answer once the length prefix and that many bytes are in.
      if (head.length >= 4 && head.length >= 4 + head.readUInt32BE(0)) connection.end(pong);
    });
  });
  rmSync(socket, { force: true });
  server.listen(socket);
  process.once('SIGTERM', () => {
    server.close();
    rmSync(socket, { force: true });
    process.exit(0);
  });
}

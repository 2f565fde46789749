/**
 * One link of the hop-floor chain (`bench/hops.ts`): a bare Node process that
 * listens on a Unix socket and, for each connection, reads one length-prefixed
 * frame (4-byte big-endian length + body), opens a fresh connection to the next
 * link, forwards the frame as it came, waits for the reply frame and passes it
 * back, then closes. The last link answers with a small frame of its own. No
 * parsing, no logging, no validation: the cost of the process crossings alone.
 *
 * Usage: node hop-relay.js LISTEN_SOCKET [NEXT_SOCKET]
 */
import net from 'node:net';

const [listenPath, nextPath] = process.argv.slice(2);
if (!listenPath) {
  process.stderr.write('usage: hop-relay LISTEN_SOCKET [NEXT_SOCKET]\n');
  process.exit(2);
}

const REPLY_BODY = Buffer.from(JSON.stringify({ type: 'chunk', delta: 'The short answer is yes.' }));
const REPLY = Buffer.concat([Buffer.alloc(4), REPLY_BODY]);
REPLY.writeUInt32BE(REPLY_BODY.length, 0);

/** Calls `onFrame` with the first whole frame (header included) read from `socket`. */
function readFrame(socket: net.Socket, onFrame: (frame: Buffer) => void): void {
  const parts: Buffer[] = [];
  let have = 0;
  const onData = (data: Buffer): void => {
    parts.push(data);
    have += data.length;
    if (have < 4) return;
    const all = parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts);
    parts.length = 0;
    parts.push(all);
    const want = 4 + all.readUInt32BE(0);
    if (have < want) return;
    socket.off('data', onData);
    onFrame(all.subarray(0, want));
  };
  socket.on('data', onData);
}

const server = net.createServer((socket) => {
  socket.on('error', () => socket.destroy());
  readFrame(socket, (frame) => {
    if (!nextPath) {
      socket.end(REPLY);
      return;
    }
    const next = net.createConnection({ path: nextPath });
    next.on('error', () => {
      next.destroy();
      socket.destroy();
    });
    next.write(frame);
    readFrame(next, (reply) => {
      next.end();
      socket.end(reply);
    });
  });
});
server.listen(listenPath, () => process.stdout.write('ready\n'));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
process.stdin.on('end', () => process.exit(0)).resume();

/**
 * One link of the hop-floor chain (`bench/hops.ts`): a bare Node process that
 * listens on a Unix socket and relays length-prefixed frames (4-byte big-endian
 * length + body) to the next link, passing the reply frame back. The last link
 * answers with a small frame of its own. No parsing, no logging, no validation:
 * the cost of the process crossings alone.
 *
 * Two ways to relay:
 * - `fresh` (the floor): one request per connection, as the suite's protocol has.
 *   For each accepted connection: read one frame, open a fresh connection to the
 *   next link, forward the frame as it came, wait for the reply, pass it back, close.
 * - `kept`: connections stay open between requests (the protocol forbids this; it is
 *   measured to show what connecting, accepting and closing cost). Each accepted
 *   connection carries one request after another; the link relays each over an
 *   idle connection to the next link that it keeps, opening one only when none is idle.
 *
 * Usage: node hop-relay.js fresh|kept LISTEN_SOCKET [NEXT_SOCKET]
 */
import net from 'node:net';
import type { DuplexOptions } from 'node:stream';

const [mode, listenPath, nextPath] = process.argv.slice(2);
if ((mode !== 'fresh' && mode !== 'kept') || !listenPath) {
  process.stderr.write('usage: hop-relay fresh|kept LISTEN_SOCKET [NEXT_SOCKET]\n');
  process.exit(2);
}

const REPLY_BODY = Buffer.from(JSON.stringify({ type: 'chunk', delta: 'The short answer is yes.' }));
const REPLY = Buffer.concat([Buffer.alloc(4), REPLY_BODY]);
REPLY.writeUInt32BE(REPLY_BODY.length, 0);

/**
 * A connection's options with the four fields net.Socket sets on its copy of them, as the suite's
 * client gives them (`socketOptions` in src/runtime/transport/client.ts; docs/benchmarks.md, round 11):
 * without them, each connection's set-up misses V8's caches on Node 20, and the floor would carry a
 * cost the suite no longer does.
 */
function connectTo(path: string): net.Socket {
  const options: net.IpcNetConnectOpts & Pick<DuplexOptions, 'emitClose' | 'autoDestroy' | 'decodeStrings'> = {
    path,
    allowHalfOpen: false,
    emitClose: false,
    autoDestroy: true,
    decodeStrings: false,
  };
  return net.createConnection(options);
}

/** Calls `onFrame` with each whole frame (header included) read from `socket`, until `onFrame` returns false. */
function readFrames(socket: net.Socket, onFrame: (frame: Buffer) => boolean): void {
  let pending: Buffer | undefined;
  const onData = (data: Buffer): void => {
    let all = pending ? Buffer.concat([pending, data]) : data;
    pending = undefined;
    while (all.length >= 4) {
      const want = 4 + all.readUInt32BE(0);
      if (all.length < want) break;
      if (!onFrame(all.subarray(0, want))) {
        socket.off('data', onData);
        return;
      }
      all = all.subarray(want);
    }
    if (all.length > 0) pending = all;
  };
  socket.on('data', onData);
}

/** `fresh`: one request per connection, here and to the next link. */
function relayFresh(socket: net.Socket): void {
  readFrames(socket, (frame) => {
    if (!nextPath) {
      socket.end(REPLY);
      return false;
    }
    const next = connectTo(nextPath);
    next.on('error', () => {
      next.destroy();
      socket.destroy();
    });
    next.write(frame);
    readFrames(next, (reply) => {
      next.end();
      socket.end(reply);
      return false;
    });
    return false;
  });
}

/** A kept connection to the next link and the caller whose reply it is carrying, if any. */
interface Upstream {
  socket: net.Socket;
  waiting: { caller: net.Socket; onReply: (reply: Buffer) => void } | undefined;
}
const idle: Upstream[] = [];

function upstream(path: string): Upstream {
  const kept = idle.pop();
  if (kept) return kept;
  const up: Upstream = { socket: connectTo(path), waiting: undefined };
  up.socket.on('error', () => up.socket.destroy());
  // A next link that goes away takes the request waiting on it along: its caller sees the close.
  up.socket.on('close', () => {
    const at = idle.indexOf(up);
    if (at >= 0) idle.splice(at, 1);
    up.waiting?.caller.destroy();
  });
  readFrames(up.socket, (reply) => {
    const waiting = up.waiting;
    up.waiting = undefined;
    idle.push(up);
    waiting?.onReply(reply);
    return true;
  });
  return up;
}

/**
 * `kept`: every connection carries one request after another, one at a time (the
 * bench sends the next only after the reply; pipelined requests are not supported).
 */
function relayKept(socket: net.Socket): void {
  readFrames(socket, (frame) => {
    if (!nextPath) {
      socket.write(REPLY);
      return true;
    }
    const up = upstream(nextPath);
    up.waiting = { caller: socket, onReply: (reply) => socket.write(reply) };
    up.socket.write(frame);
    return true;
  });
}

const server = net.createServer((socket) => {
  socket.on('error', () => socket.destroy());
  if (mode === 'kept') relayKept(socket);
  else relayFresh(socket);
});
server.listen(listenPath, () => process.stdout.write('ready\n'));
// Kept connections never close by themselves, so a stop does not wait for them.
process.on('SIGTERM', () => process.exit(0));
process.stdin.on('end', () => process.exit(0)).resume();

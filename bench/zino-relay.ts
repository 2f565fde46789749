/**
 * One link of the transport chain (`bench/hops.ts`, `hops.N.zino.*`): the suite's own
 * server and client (`serve`, `request` from src/runtime) relaying a request to the
 * next link, one request per connection, as every service hop does. Unlike the bare
 * relay (`bench/hop-relay.ts`), each hop parses the frame, routes it by `type`,
 * sets up what every handler gets (cancel signal, request id, logger) and encodes
 * the reply again; no service logic. The difference to the floor is what the
 * framework costs per hop.
 *
 * Usage: node zino-relay.js LISTEN_SOCKET [NEXT_SOCKET]
 */
import { createLogger, request, serve } from '../src/runtime/index.js';

const [listenPath, nextPath] = process.argv.slice(2);
if (!listenPath) {
  process.stderr.write('usage: zino-relay LISTEN_SOCKET [NEXT_SOCKET]\n');
  process.exit(2);
}

// Logs at info as the suite's services do; a relay writes no line per request, as they write few.
const log = createLogger('relay', { configLevel: 'info' });
const REPLY = { type: 'chunk', delta: 'The short answer is yes.' };

const server = await serve(listenPath, {
  log,
  handlers: {
    infer: async (frame, ctx) => {
      if (!nextPath) return REPLY;
      const reply = await request(nextPath, frame, { signal: ctx.signal });
      // Set on the reply (this call's own), not `{ ...reply, type }`: see frameOf in src/runtime/transport/endpoint.ts.
      return Object.assign(reply, { type: typeof reply.type === 'string' ? reply.type : 'error' });
    },
  },
});
process.stdout.write('ready\n');
process.on('SIGTERM', () => void server.close().then(() => process.exit(0)));
process.stdin.on('end', () => process.exit(0)).resume();

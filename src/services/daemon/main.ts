/**
 * zino-daemon: the front door. The contract's inbound message has no `type`
 * (`{"message", "channel_id"?, "stream"?}`); ZINO adds `{"type":"status"}`.
 */
import type { ServiceDefinition } from '../../runtime/index.js';
import { ask } from './ask.js';
import { ChannelLock } from './channel-lock.js';
import { status } from './status.js';

const daemon: ServiceDefinition = {
  name: 'daemon',
  create(config) {
    const lock = new ChannelLock();
    return {
      handlers: {
        status: (_request, ctx) => status(config, ctx),
      },
      untyped: (request, ctx) => ask(config, lock, request, ctx),
    };
  },
};

export default daemon;

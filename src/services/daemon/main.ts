/**
 * zino-daemon: the front door. The contract's inbound message has no `type`
 * (`{"message", "channel_id"?, "stream"?}`); ZINO adds `{"type":"status"}`, and
 * `approve` / `approvals`, which reach exc's pending approvals.
 */
import { bindHandlers, type ServiceDefinition } from '../../runtime/index.js';
import { DAEMON } from '../../protocol/daemon.js';
import { approvals, approve } from './approvals.js';
import { ask } from './ask.js';
import { ChannelLock } from './channel-lock.js';
import { PromptWatch } from './prompt-watch.js';
import { status } from './status.js';

const daemon: ServiceDefinition = {
  name: 'daemon',
  create(config, log) {
    const lock = new ChannelLock();
    const watch = new PromptWatch(config, log);
    return {
      // eslint-disable-next-line no-restricted-syntax -- made once, at start
      ...bindHandlers(DAEMON)({
        ask: (request, ctx) => ask(config, lock, request, ctx, watch),
        status: (_request, ctx) => status(config, ctx),
        approve: (request, ctx) => approve(config, request, ctx),
        approvals: (request, ctx) => approvals(config, request, ctx),
      }),
      close: () => watch.close(),
    };
  },
};

export default daemon;

/**
 * zino-agr: the agentic loop. Message: `run` (streamed `chunk`… `done`, or one
 * `result`). Tools and skills come from the catalog, reloaded on SIGHUP; MCP tools
 * from exc (`list_tools`, `call_tool`).
 */
import {
  Endpoint,
  bindHandlers,
  clientOptions,
  loadCatalog,
  optionalBoolean,
  optionalInteger,
  optionalNumber,
  optionalString,
  parseMessages,
  type Catalog,
  type ServiceDefinition,
  type Unvalidated,
} from '../../runtime/index.js';
import { AGR, type AgrEvent, type ApprovalRequired, type RunRequest } from '../../protocol/agr.js';
import { EXC } from '../../protocol/exc.js';
import { RTR } from '../../protocol/rtr.js';
import { checkChannelId } from '../../protocol/mem.js';
import { runLoop } from './loop.js';

/** Margin on top of exc's own timeout before agr gives up on an execution, in ms. */
const EXC_MARGIN_MS = 15_000;
/** The longest timer Node keeps (2^31−1 ms); longer ones fire at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

const agr: ServiceDefinition = {
  name: 'agr',
  async create(config, log) {
    const load = () => loadCatalog({ tools: config.tools.dir, skills: config.skills.dir }, log);
    let catalog: Catalog = await load();
    log.info({ tools: catalog.tools.map((t) => t.name), skills: catalog.skills.map((s) => s.name) }, 'catalog loaded');
    const rtr = new Endpoint(RTR, config.rtr.socket, clientOptions(config, 'rtr'));
    // An execution may first wait for a person ([approval] timeout_s), then run ([exc] timeout).
    const excBoundMs = Math.min(MAX_TIMER_MS, (config.exc.timeout + config.approval.timeout_s) * 1000 + EXC_MARGIN_MS);
    const exc = new Endpoint(EXC, config.exc.socket, clientOptions(config, 'exc', { timeoutMs: excBoundMs }));
    // With MCP servers configured, a tool name outside the catalog may be one of exc's MCP tools.
    const mcp = Object.keys(config.mcp.servers).length > 0;

    return {
      // eslint-disable-next-line no-restricted-syntax -- made once, at start
      ...bindHandlers(AGR)({
        run: async (request, ctx) => {
          const params = {
            messages: parseMessages(request.messages, 'messages', { allowEmpty: false }),
            sampling: {
              temperature: optionalNumber(request, 'temperature', { min: 0, max: 2 }) ?? config.agent.temperature,
              top_p: optionalNumber(request, 'top_p', { min: 0, max: 1 }) ?? config.agent.top_p,
            },
            maxIterations: optionalInteger(request, 'max_iterations', { min: 1, max: 100 }) ?? config.agr.max_iterations,
            stream: optionalBoolean(request, 'stream') ?? false,
            events: optionalBoolean(request, 'events') ?? false,
            approvals: optionalBoolean(request, 'approvals') ?? false,
            channelId: channelOf(request),
          };
          const sink = {
            chunk: (text: string) => ctx.send({ type: 'chunk', delta: text }),
            event: (frame: AgrEvent | ApprovalRequired) => ctx.send(frame),
          };
          const deps = {
            rtr,
            exc,
            catalog,
            maxBlockBytes: config.agr.max_block_bytes,
            mcp,
            mcpMarginMs: EXC_MARGIN_MS,
            approvalMs: config.approval.timeout_s * 1000,
          };
          const result = await runLoop(deps, params, ctx, sink);
          const usage = result.usage ? { usage: result.usage } : {};
          ctx.log.info({ iterations: result.iterations, chars: result.text.length, limitReached: result.limitReached, ...usage }, 'run complete');
          // Said on the wire (an extra field) so that the user learns the answer was cut short.
          const limit = result.limitReached ? { limit_reached: true as const } : {};
          return params.stream
            ? { type: 'done', full_text: result.text, iterations: result.iterations, ...usage, ...limit }
            : { type: 'result', content: result.text, iterations: result.iterations, ...usage, ...limit };
        },
      }),
      reload: async () => {
        catalog = await load();
        log.info({ tools: catalog.tools.length, skills: catalog.skills.length }, 'catalog reloaded');
      },
    };
  },
};

export default agr;

/** The optional `channel_id`, checked as mem checks it. */
function channelOf(request: Unvalidated<RunRequest>): string | undefined {
  const channelId = optionalString(request, 'channel_id');
  if (channelId !== undefined) checkChannelId(channelId);
  return channelId;
}

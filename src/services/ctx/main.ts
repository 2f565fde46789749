/**
 * zino-ctx: assembles the context messages that go between the system prompt and
 * the user message: skill examples (loaded at start, reloaded on SIGHUP), then the
 * hard memories mem finds for the user message, then the channel's recent history.
 * mem is asked for both in one exchange when it knows how (`get_context`), else with
 * two calls at once; a part mem cannot supply is left out (fetch.ts).
 * `[ctx] max_context_tokens` trims the result (budget.ts).
 */
import {
  bindHandlers,
  fabricatorExamples,
  loadCatalog,
  optionalString,
  parseMessages,
  requireString,
  type ChatMessage,
  type Logger,
  type MessageHandler,
  type ResolvedConfig,
  type ServiceDefinition,
  type ServiceInstance,
} from '../../runtime/index.js';
import { CTX, type ContextPart } from '../../protocol/ctx.js';
import { fitBudget, fitBytes, flatten, lastMessages } from './budget.js';
import { MemFetcher } from './fetch.js';

/** The user/assistant example pairs of every skill's fabricator, in skill-file order. */
export async function loadExamples(config: Readonly<ResolvedConfig>, log: Logger): Promise<ChatMessage[]> {
  const catalog = await loadCatalog({ tools: config.tools.dir, skills: config.skills.dir }, log);
  return catalog.skills.flatMap((skill) => fabricatorExamples(skill));
}

/** Builds the `build` handler over the current examples. */
export function buildHandler(config: Readonly<ResolvedConfig>, examples: () => ChatMessage[], mem: MemFetcher): MessageHandler<typeof CTX.build> {
  return async (request, ctx) => {
    const userMessage = requireString(request, 'user_message');
    const channelId = optionalString(request, 'channel_id');
    const given = request.history === undefined || request.history === null ? undefined : parseMessages(request.history, 'history');
    const { hard_memory_top_k: topK, history_limit: historyLimit, max_context_tokens: maxTokens } = config.ctx;
    const { hard, history } = await mem.fetch(
      {
        query: topK > 0 && userMessage.trim() !== '' ? userMessage : undefined,
        topK,
        channelId: given === undefined && channelId !== undefined && channelId !== '' ? channelId : undefined,
        limit: historyLimit,
      },
      ctx,
    );
    const trimmed = fitBytes(
      fitBudget({ examples: examples(), hard: hard ?? [], history: given !== undefined ? lastMessages(given, historyLimit) : (history ?? []) }, maxTokens),
      Math.floor(config.limits.max_frame_bytes / 4),
      'once', // the catalog's list: the same until a reload makes a new one
    );
    const messages = flatten(trimmed.parts);
    const missing: ContextPart[] = [...(hard ? [] : ['hard_memories' as const]), ...(history ? [] : ['history' as const])];
    ctx.log.info(
      {
        examples: trimmed.parts.examples.length,
        hardMemories: trimmed.parts.hard.length,
        history: trimmed.parts.history.length,
        droppedHistory: trimmed.droppedHistory,
        droppedHardMemories: trimmed.droppedHard,
        tokens: trimmed.tokens,
        missing,
        historyFrom: given !== undefined ? 'request' : 'channel',
      },
      'context built',
    );
    return { type: 'context', messages, ...(missing.length > 0 ? { missing } : {}), ...(given !== undefined ? { history_taken: true as const } : {}) };
  };
}

const definition: ServiceDefinition = {
  name: 'ctx',
  async create(config: Readonly<ResolvedConfig>, log: Logger): Promise<ServiceInstance> {
    let examples = await loadExamples(config, log);
    log.info({ examples: examples.length }, 'skill examples loaded');
    const mem = new MemFetcher(config);
    return {
      // eslint-disable-next-line no-restricted-syntax -- made once, at start
      ...bindHandlers(CTX)({ build: buildHandler(config, () => examples, mem) }),
      async reload() {
        mem.reset();
        examples = await loadExamples(config, log);
        log.info({ examples: examples.length }, 'skill examples loaded');
      },
    };
  },
};

export default definition;

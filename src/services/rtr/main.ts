/**
 * zino-rtr: the only process that talks to the LLM. Messages: `capabilities`,
 * `infer` (streamed or collected). Without a usable `[api]` configuration it still
 * starts and answers every `infer` with NOT_CONFIGURED saying what to set.
 */
import { ZinoError, bindHandlers, optionalBoolean, optionalInteger, optionalNumber, parseMessages, type ServiceDefinition } from '../../runtime/index.js';
import { RTR, type RtrCapabilities } from '../../protocol/rtr.js';
import { inferCollected, inferStreamed } from './infer.js';
import { selectBackend } from './select.js';

const rtr: ServiceDefinition = {
  name: 'rtr',
  create(config, log) {
    const selection = selectBackend(config, log);
    if (selection.backend) {
      log.info(
        { backend: selection.backend.kind, base_url: config.api.base_url, model: selection.backend.model || '(detect)', streaming: config.rtr.streaming },
        'LLM backend ready',
      );
    } else {
      log.warn({ problem: selection.problem }, 'LLM backend not configured; infer will answer with an error');
    }
    const capabilities = (): RtrCapabilities => ({
      type: 'capabilities',
      streaming: config.rtr.streaming,
      model: selection.backend?.model || config.service.model,
      backend: selection.backend?.kind ?? 'none',
      configured: selection.backend !== undefined,
    });
    return {
      ...bindHandlers(RTR)({
        capabilities,
        infer: (request, ctx) => {
          const params = {
            messages: parseMessages(request.messages, 'messages', { allowEmpty: false }),
            temperature: optionalNumber(request, 'temperature', { min: 0, max: 2 }) ?? config.agent.temperature,
            top_p: optionalNumber(request, 'top_p', { min: 0, max: 1 }) ?? config.agent.top_p,
            max_tokens: optionalInteger(request, 'max_tokens', { min: 1 }),
          };
          const stream = optionalBoolean(request, 'stream') ?? false;
          if (!selection.backend) throw new ZinoError('NOT_CONFIGURED', selection.problem);
          const deps = { backend: selection.backend, maxRetries: config.rtr.max_retries, baseUrl: config.api.base_url };
          return stream && config.rtr.streaming ? inferStreamed(deps, params, ctx) : inferCollected(deps, params, ctx);
        },
      }),
    };
  },
};

export default rtr;

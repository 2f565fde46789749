/**
 * zino-rtr: the only process that talks to the LLM. Messages: `capabilities`
 * (with `probe`, the endpoint is checked now), `infer` (streamed or collected).
 * Without a usable `[api]` configuration it still starts and answers every `infer`
 * with NOT_CONFIGURED saying what to set. At start it checks the endpoint and logs
 * whether it answers; SIGHUP re-reads the key file.
 *
 * The openai SDK (engine.ts) is imported once rtr listens, not before: a request that comes
 * first waits for that import (issue 18: rtr answered ping last of the seven, after about
 * 100 ms more CPU than the others spent loading the SDK).
 */
import {
  InvalidRequestError,
  ZinoError,
  bindHandlers,
  castToError,
  contentChars,
  optionalBoolean,
  optionalInteger,
  optionalNumber,
  parseMessages,
  type ChatMessage,
  type Logger,
  type ResolvedConfig,
  type ServiceDefinition,
} from '../../runtime/index.js';
import { RTR, type LlmProbe, type RtrCapabilities } from '../../protocol/rtr.js';
import type { ErrorHints } from './api-errors.js';
import { selectBackend, type Selection } from './select.js';

/** engine.ts: the openai SDK and what uses it. */
type Engine = typeof import('./engine.js');

/** Bound on one check of the endpoint (`capabilities` with `probe`, and at start), in milliseconds. */
const PROBE_TIMEOUT_MS = 5000;

/** Checks the endpoint now: reachable, and which models it lists. */
async function probe(engine: Engine, selection: Selection, hints: ErrorHints, timeoutMs: number): Promise<LlmProbe> {
  if (!selection.backend) return { reachable: false, error: selection.problem, code: 'NOT_CONFIGURED' };
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    const { models } = await selection.backend.check(signal);
    return models === undefined ? { reachable: true } : { reachable: true, models };
  } catch (err) {
    const error = signal.aborted
      ? new ZinoError('TIMEOUT', `the LLM API at ${hints.baseUrl} did not list its models within ${timeoutMs / 1000} s`)
      : engine.toZinoError(err, hints, 1);
    return { reachable: error.code !== 'UPSTREAM_UNAVAILABLE' && error.code !== 'TIMEOUT', error: error.message, code: error.code };
  }
}

/** Logs what the start-up check found: "ready" only when the endpoint answered. */
function logProbe(log: Logger, config: Readonly<ResolvedConfig>, selection: Selection, result: LlmProbe): void {
  const fields = { base_url: config.api.base_url, model: selection.backend?.model || '(detect)' };
  if (result.reachable && result.error === undefined)
    log.info(Object.assign({}, fields, { models: result.models?.slice(0, 20) }), 'LLM backend ready: the endpoint answers');
  else log.warn(Object.assign({}, fields, { code: result.code, reason: result.error }), 'LLM endpoint check failed: requests will fail until it is fixed');
}

/** Refuses a prompt over `[rtr] max_prompt_bytes` (all message contents, UTF-8) before anything is sent. */
function checkPromptSize(messages: readonly ChatMessage[], bound: number): void {
  // A UTF-16 code unit is at most 3 UTF-8 bytes: most prompts need no count.
  if (contentChars(messages) * 3 <= bound) return;
  let bytes = 0;
  for (const m of messages) bytes += Buffer.byteLength(m.content, 'utf8');
  if (bytes > bound) {
    throw new InvalidRequestError(`the prompt is ${bytes} bytes, over the bound of ${bound} bytes ([rtr] max_prompt_bytes); it was not sent to the LLM`);
  }
}

const rtr: ServiceDefinition = {
  name: 'rtr',
  create(config, log, context) {
    let loading: Promise<Engine> | undefined;
    /** The engine, imported on first use: at the latest once rtr listens (`listening` below). */
    const engine = (): Promise<Engine> => (loading ??= import('./engine.js'));
    /** The backend chosen from the configuration, once the engine is there (again on SIGHUP). */
    let selecting: Promise<Selection> | undefined;
    const select = (): Promise<Selection> =>
      (selecting = engine().then((e) => {
        const selection = selectBackend(config, log, e.OpenAiBackend, context.configFile);
        announce(e, selection);
        return selection;
      }));
    const selected = (): Promise<Selection> => selecting ?? select();
    const hints = (selection: Selection): ErrorHints => ({ baseUrl: config.api.base_url, keySource: selection.keySource ?? 'no key' });
    const probeMs = Math.min(PROBE_TIMEOUT_MS, config.rtr.timeout * 1000);
    const announce = (e: Engine, selection: Selection): void => {
      if (!selection.backend) {
        log.warn({ problem: selection.problem }, 'LLM backend not configured; infer will answer with an error');
        return;
      }
      log.info(
        { backend: selection.backend.kind, base_url: config.api.base_url, model: selection.backend.model || '(detect)', key_source: selection.keySource },
        'LLM backend configured; checking the endpoint',
      );
      probe(e, selection, hints(selection), probeMs).then(
        (result) => logProbe(log, config, selection, result),
        (err: unknown) => log.error({ err: castToError(err) }, 'LLM endpoint check failed'),
      );
    };
    const capabilities = async (probeNow: boolean): Promise<RtrCapabilities> => {
      const selection = await selected();
      const llm = probeNow ? await probe(await engine(), selection, hints(selection), probeMs) : undefined;
      return {
        type: 'capabilities',
        streaming: config.rtr.streaming,
        model: selection.backend?.model || config.service.model,
        backend: selection.backend?.kind ?? 'none',
        configured: selection.backend !== undefined,
        base_url: config.api.base_url,
        ...(selection.problem === undefined ? {} : { problem: selection.problem }),
        ...(selection.keySource === undefined ? {} : { key_source: selection.keySource }),
        ...(llm ? { llm } : {}),
      };
    };
    return {
      // eslint-disable-next-line no-restricted-syntax -- made once, at start
      ...bindHandlers(RTR)({
        capabilities: (request) => capabilities(optionalBoolean(request, 'probe') ?? false),
        infer: async (request, ctx) => {
          const params = {
            messages: parseMessages(request.messages, 'messages', { allowEmpty: false }),
            temperature: optionalNumber(request, 'temperature', { min: 0, max: 2 }) ?? config.agent.temperature,
            top_p: optionalNumber(request, 'top_p', { min: 0, max: 1 }) ?? config.agent.top_p,
            max_tokens: optionalInteger(request, 'max_tokens', { min: 1 }),
          };
          const stream = optionalBoolean(request, 'stream') ?? false;
          checkPromptSize(params.messages, config.rtr.max_prompt_bytes);
          const selection = await selected();
          if (!selection.backend) throw new ZinoError('NOT_CONFIGURED', selection.problem);
          const e = await engine();
          const deps = { backend: selection.backend, maxRetries: config.rtr.max_retries, timeoutMs: config.rtr.timeout * 1000, hints: hints(selection) };
          return stream && config.rtr.streaming ? e.inferStreamed(deps, params, ctx) : e.inferCollected(deps, params, ctx);
        },
      }),
      listening() {
        // The engine, the backend and the start-up check of the endpoint, now that rtr answers; then the SDK's warm-up.
        selected()
          .then(
            async (selection) => {
              if (selection.backend?.kind === 'openai') await (await engine()).warmUp(log);
            },
            (err: unknown) => log.error({ err: castToError(err) }, 'cannot load the LLM client'),
          )
          .catch((err: unknown) => log.debug({ err: castToError(err) }, 'warm-up of the SDK failed (the first request compiles it instead)'));
      },
      async reload() {
        // The key file may have been created or fixed (chmod 600) since the start.
        await select();
      },
    };
  },
};

export default rtr;

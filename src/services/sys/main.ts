/**
 * zino-sys: serves the system prompt rendered from `[sys] template` with the
 * tools, skills, personality, iteration limit and soft memory. Messages: `get`,
 * `reload` (also on SIGHUP), `set_soft_memory`. A missing template serves an
 * empty prompt with a warning.
 *
 * The soft memory starts from `[sys] soft_memory`; mem's durable soft memory, when
 * it is not empty, replaces it at start and on every reload, so what `zino mem soft`
 * stored survives a restart of sys. mem may start after sys: it is asked again
 * every second for up to 30 s.
 *
 * With `[mcp.servers]` configured, the tool list also holds the MCP tools exc offers
 * (`list_tools`), asked for at start (again every second for up to 30 s while exc is
 * not up) and on every reload; exc sends sys a `reload` when its tools change.
 */
import { readFile } from 'node:fs/promises';
import {
  Endpoint,
  InvalidRequestError,
  RemoteError,
  bindHandlers,
  clientOptions,
  loadCatalog,
  requireString,
  type Catalog,
  type Logger,
  type ResolvedConfig,
  type ServiceDefinition,
} from '../../runtime/index.js';
import { EXC, type McpTool } from '../../protocol/exc.js';
import { MEM } from '../../protocol/mem.js';
import { SYS, type SystemPromptReply } from '../../protocol/sys.js';
import { renderPrompt } from './render.js';

/**
 * Bound on asking mem for the soft memory before sys listens, in ms: start-up is not
 * held up by a slow mem (it is asked again, with the longer bound, once sys listens).
 */
const SOFT_MEMORY_START_TIMEOUT_MS = 1000;
/** Bound on asking exc for its MCP tools, in ms. */
const MCP_TOOLS_TIMEOUT_MS = 2000;

/** The prompt and what it was rendered from. */
class SystemPrompt {
  private catalog: Catalog = { tools: [], skills: [], problems: [] };
  private template = '';
  private softMemory: string;
  private mcpTools: McpTool[] = [];
  private rendered = '';
  private readonly mem: Endpoint<typeof MEM>;
  private readonly exc: Endpoint<typeof EXC> | undefined;

  constructor(
    private readonly config: Readonly<ResolvedConfig>,
    private readonly log: Logger,
  ) {
    this.softMemory = config.sys.soft_memory;
    // 1 s: sys asks at start, before it listens, and every second while mem is not up yet.
    this.mem = new Endpoint(MEM, config.mem.socket, clientOptions(config, 'mem', { timeoutMs: config.limits.request_read_timeout_ms }));
    // Without MCP servers exc has no tools to offer: sys never asks.
    this.exc =
      Object.keys(config.mcp.servers).length > 0
        ? new Endpoint(EXC, config.exc.socket, clientOptions(config, 'exc', { timeoutMs: MCP_TOOLS_TIMEOUT_MS }))
        : undefined;
  }

  get content(): string {
    return this.rendered;
  }

  /** Re-reads the template, tools and skills, then renders. */
  async reload(): Promise<string> {
    const [catalog, template] = await Promise.all([
      loadCatalog({ tools: this.config.tools.dir, skills: this.config.skills.dir }, this.log),
      this.readTemplate(),
    ]);
    this.catalog = catalog;
    this.template = template;
    this.render();
    this.log.info({ tools: catalog.tools.length, skills: catalog.skills.length, chars: this.rendered.length }, 'system prompt rendered');
    return this.rendered;
  }

  /**
   * Takes mem's durable soft memory when mem answers with a non-empty one.
   * Returns false when mem could not be asked. `timeoutMs` bounds the call (else
   * `[limits] request_read_timeout_ms`: a soft memory can be a quarter of a frame,
   * which takes a while to cross on a loaded machine).
   */
  async syncSoftMemory(timeoutMs?: number): Promise<boolean> {
    try {
      const reply = await this.mem.request('get_soft', {}, timeoutMs === undefined ? {} : { timeoutMs });
      if (typeof reply.content === 'string' && reply.content !== '' && reply.content !== this.softMemory) {
        this.setSoftMemory(reply.content);
        this.log.info({ chars: reply.content.length }, 'soft memory taken from mem');
      }
      return true;
    } catch (err) {
      this.log.debug({ reason: (err as Error).message }, 'mem not reachable for the soft memory');
      return false;
    }
  }

  /**
   * Takes exc's MCP tools. Returns false when exc could not be asked (the tools
   * listed before stay: a restarting exc tells sys again once its servers are up).
   */
  async syncMcpTools(): Promise<boolean> {
    if (!this.exc) return true;
    try {
      const reply = await this.exc.request('list_tools', {});
      const tools = Array.isArray(reply.tools) ? reply.tools : [];
      if (JSON.stringify(tools) !== JSON.stringify(this.mcpTools)) {
        this.mcpTools = tools;
        this.render();
        this.log.info({ mcpTools: tools.map((t) => t.name) }, 'mcp tools taken from exc');
      }
      return true;
    } catch (err) {
      // An exc that does not know the message (one written from the contract alone) has no MCP tools to give:
      // asking again every second would only repeat the refusal.
      if (err instanceof RemoteError && (err.code === 'UNKNOWN_TYPE' || err.frame.code === undefined)) {
        this.log.info({ reason: err.message }, 'exc does not know list_tools: no mcp tools in the prompt');
        if (this.mcpTools.length > 0) {
          this.mcpTools = [];
          this.render();
        }
        return true;
      }
      this.log.debug({ reason: (err as Error).message }, 'exc not reachable for the mcp tools');
      return false;
    }
  }

  setSoftMemory(content: string): string {
    this.softMemory = content;
    this.render();
    return this.rendered;
  }

  /** Called after every render that changed the prompt (sys hands it to its watchers at once). */
  onChange: (() => void) | undefined;

  private render(): void {
    const before = this.rendered;
    this.rendered = renderPrompt({
      template: this.template,
      personality: this.config.sys.personality,
      tools: this.catalog.tools,
      mcpTools: this.mcpTools,
      skills: this.catalog.skills,
      maxIterations: this.config.agent.max_iterations,
      softMemory: this.softMemory,
    });
    if (this.rendered !== before) this.onChange?.();
  }

  private async readTemplate(): Promise<string> {
    try {
      return await readFile(this.config.sys.template, 'utf8');
    } catch (err) {
      this.log.warn(
        { template: this.config.sys.template, reason: (err as NodeJS.ErrnoException).code ?? (err as Error).message },
        'system prompt template unreadable; serving an empty prompt',
      );
      return '';
    }
  }
}

/**
 * Refuses a soft memory over a quarter of the frame limit (mem's own bound): it
 * goes whole into every prompt, and a prompt over the frame limit could not be
 * sent, so every ask would lose its system prompt.
 */
function checkSoftMemory(content: string, maxFrameBytes: number): void {
  const bound = Math.floor(maxFrameBytes / 4);
  const bytes = Buffer.byteLength(content, 'utf8');
  if (bytes > bound) {
    throw new InvalidRequestError(`field "content" is ${bytes} bytes, over the soft memory's bound of ${bound} bytes (a quarter of [limits] max_frame_bytes)`);
  }
}

const sys: ServiceDefinition = {
  name: 'sys',
  async create(config, log) {
    const prompt = new SystemPrompt(config, log);
    await prompt.reload();
    const reply = (content: string): SystemPromptReply => ({ type: 'system_prompt', content });
    // The same frozen reply while the prompt is unchanged: the transport encodes a frozen frame once (codec.ts).
    let current: Readonly<SystemPromptReply> = Object.freeze(reply(prompt.content));
    const currentReply = (): Readonly<SystemPromptReply> => (current.content === prompt.content ? current : (current = Object.freeze(reply(prompt.content))));
    const watchers = new Set<Watcher>();
    const ending = new AbortController();
    /**
     * Hands the current prompt to every `watch` stream (those it is new to), at once on
     * every change, waiting until each has taken it, within {@link PUBLISH_WAIT_MS}.
     * Every reply that carries the prompt (`get` too) waits for the latest of these first:
     * nobody sees a prompt before the daemon that keeps it has it.
     */
    let published: Promise<void> = Promise.resolve();
    const publish = (): void => {
      if (watchers.size > 0) published = Promise.all([...watchers].map((w) => within(w.push(), PUBLISH_WAIT_MS))).then(() => undefined);
    };
    prompt.onChange = publish;
    /** The current prompt, once the watchers have it; with the prompt of the moment it was asked (a later change may come meanwhile). */
    const answer = async (): Promise<Readonly<SystemPromptReply>> => {
      const mine = currentReply();
      await published;
      return mine;
    };
    // mem and exc may come up after us (zino up starts everything at once): keep asking for a while.
    let tries = 0;
    let retry: NodeJS.Timeout | undefined;
    let softMemoryDone = false;
    let mcpToolsDone = false;
    const sync = async (): Promise<void> => {
      const softTimeout = tries === 0 ? SOFT_MEMORY_START_TIMEOUT_MS : undefined;
      const [soft, mcp] = await Promise.all([softMemoryDone || prompt.syncSoftMemory(softTimeout), mcpToolsDone || prompt.syncMcpTools()]);
      softMemoryDone = soft;
      mcpToolsDone = mcp;
      if (!(soft && mcp) && ++tries < 30) {
        retry = setTimeout(() => void sync(), 1000);
        retry.unref();
      }
    };
    const reload = async (): Promise<string> => {
      await prompt.reload();
      await Promise.all([prompt.syncSoftMemory(), prompt.syncMcpTools()]);
      return prompt.content;
    };
    await sync();
    return {
      // eslint-disable-next-line no-restricted-syntax -- made once, at start
      ...bindHandlers(SYS)({
        get: answer,
        reload: async () => {
          await reload();
          return answer();
        },
        set_soft_memory: (req) => {
          const content = requireString(req, 'content');
          checkSoftMemory(content, config.limits.max_frame_bytes);
          prompt.setSoftMemory(content);
          return answer();
        },
        watch: async (_req, ctx) => {
          const watcher = new Watcher((frame) => ctx.send(frame), currentReply);
          watchers.add(watcher);
          try {
            await watcher.push();
            await untilAborted(ctx.signal, ending.signal);
          } finally {
            watchers.delete(watcher);
          }
          return { type: 'done' };
        },
      }),
      reload: async () => {
        await reload();
        await published;
      },
      stopping: () => ending.abort(),
      close: () => clearTimeout(retry),
    };
  },
};

/**
 * How long a change waits for a `watch` stream to take the new prompt, in ms. A
 * reader that keeps up takes it at once; one that does not (a stuck client) must not
 * hold up the answer, and gets the latest prompt when it reads again.
 */
const PUBLISH_WAIT_MS = 1000;

/** One `watch` stream: sends the prompt when it changed since the last send, one frame at a time, the latest when it falls behind. */
class Watcher {
  private sent: string | undefined;
  private inFlight: Promise<void> | undefined;
  private draining = false;
  private again = false;

  constructor(
    private readonly send: (frame: Readonly<SystemPromptReply>) => Promise<void>,
    private readonly current: () => Readonly<SystemPromptReply>,
  ) {}

  /** Settles once the socket has taken the latest prompt. */
  push(): Promise<void> {
    this.again = true;
    // `draining` is set and cleared within drain() itself, so a push never joins a drain that has left its loop.
    if (!this.draining) this.inFlight = this.drain();
    return this.inFlight ?? Promise.resolve();
  }

  private async drain(): Promise<void> {
    this.draining = true;
    try {
      while (this.again) {
        this.again = false;
        const frame = this.current();
        if (frame.content !== this.sent) {
          await this.send(frame);
          // The transport holds a frame until the end of the tick to send a burst in one write (writer.ts),
          // but the change's answer may leave before that (a connection's end flushes at once): wait until
          // this frame is with the kernel, so that it is ahead of the answer.
          await new Promise<void>((resolve) => setImmediate(resolve));
          this.sent = frame.content;
        }
      }
    } finally {
      this.draining = false;
    }
  }
}

/** Resolves when either signal aborts. */
function untilAborted(a: AbortSignal, b: AbortSignal): Promise<void> {
  if (a.aborted || b.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      a.removeEventListener('abort', done);
      b.removeEventListener('abort', done);
      resolve();
    };
    a.addEventListener('abort', done, { once: true });
    b.addEventListener('abort', done, { once: true });
  });
}

/** Waits for `work` (its failure ignored: a watcher that went away) for at most `ms`. */
async function within(work: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([work.catch(() => undefined), new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

export default sys;

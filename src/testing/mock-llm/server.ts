/**
 * A mock OpenAI-compatible LLM server on 127.0.0.1 for tests and benchmarks:
 * `POST /v1/chat/completions` (SSE stream or JSON), `GET /v1/models`, and for a
 * test or benchmark in another process `GET /_mock/stats` and `POST /_mock/script`
 * (replaces the script). Replies follow a {@link MockScript}.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { chunksOf, parseScript, replyText, ruleMatches, type MockRule, type MockScript } from './script.js';

/** What the mock has seen. */
export interface MockStats {
  /** Chat completion requests received. */
  requests: number;
  /** Responses (streamed or not) that the client abandoned before they were complete. */
  aborted: number;
  /** Requests currently open. */
  active: number;
  /** Parsed JSON bodies of every chat completion request, in arrival order. */
  bodies: Record<string, unknown>[];
  /** Authorization headers received. */
  authorizations: (string | undefined)[];
  /** Arrival time of every chat completion request (ms since the epoch). */
  arrivals: number[];
  /** Bytes of streamed (SSE) data written so far: stalls when a client applies backpressure. */
  bytesStreamed: number;
  /** `GET /v1/models` requests received. */
  modelLists: number;
  /** Requests waiting at a closed gate, by gate name. */
  waiting: Record<string, number>;
}

/** A running mock server. */
export interface MockLlm {
  /** Base URL for an OpenAI client, e.g. "http://127.0.0.1:43123/v1". */
  readonly baseUrl: string;
  readonly port: number;
  readonly stats: MockStats;
  /** Replaces the script (counters of `failTimes` and `times` start over). */
  setScript(script: MockScript): void;
  /** Replaces the script and zeroes the counters a test reads (requests, aborts, bodies…). */
  reset(script?: MockScript): void;
  /** Opens a gate: replies held by rules with this `gate` go on (now and from now on, until the next reset). */
  release(gate: string): void;
  /** Resolves when `stats.aborted` reaches `count`. */
  waitForAborts(count: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** Starts the mock on 127.0.0.1 (`port` 0 picks a free one). */
export async function startMockLlm(script: MockScript = {}, options: { port?: number } = {}): Promise<MockLlm> {
  let current = script;
  let uses = new Map<MockRule, number>();
  const stats: MockStats = {
    requests: 0,
    aborted: 0,
    active: 0,
    bodies: [],
    authorizations: [],
    arrivals: [],
    bytesStreamed: 0,
    modelLists: 0,
    waiting: {},
  };
  const gates = new Map<string, { open: boolean; promise: Promise<void>; resolve: () => void }>();
  const gate = (name: string) => {
    let entry = gates.get(name);
    if (!entry) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      entry = { open: false, promise, resolve };
      gates.set(name, entry);
    }
    return entry;
  };
  const release = (name: string): void => {
    const entry = gate(name);
    entry.open = true;
    entry.resolve();
  };
  const sockets = new Set<import('node:net').Socket>();
  let sequence = 0;

  const server = http.createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) sendError(res, 500, `mock failure: ${(err as Error).message}`);
      else res.destroy();
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://mock');
    const model = current.model ?? 'mock-model';
    if (req.method === 'GET' && url.pathname === '/v1/models') {
      stats.modelLists++;
      // As OpenAI's: the list needs the key too (Ollama's needs none: a script without apiKey).
      if (current.apiKey !== undefined && req.headers.authorization !== `Bearer ${current.apiKey}`) {
        sendError(res, 401, 'Incorrect API key provided.', 'invalid_request_error');
        return;
      }
      if (current.modelsStatus !== undefined) {
        sendError(res, current.modelsStatus, `mock error ${current.modelsStatus}`);
        return;
      }
      const ids = current.models ?? [model];
      json(res, 200, { object: 'list', data: ids.map((id) => ({ id, object: 'model', created: 0, owned_by: 'zino-mock' })) });
      return;
    }
    if (req.method === 'POST' && url.pathname === '/_mock/release') {
      try {
        const { gate: name } = JSON.parse(await readBody(req)) as { gate?: unknown };
        if (typeof name !== 'string') throw new Error('"gate" must be a string');
        release(name);
        json(res, 200, { ok: true });
      } catch (err) {
        sendError(res, 400, `invalid release: ${(err as Error).message}`);
      }
      return;
    }
    if (req.method === 'GET' && url.pathname === '/_mock/stats') {
      json(res, 200, stats);
      return;
    }
    if (req.method === 'POST' && url.pathname === '/_mock/script') {
      try {
        current = parseScript(JSON.parse(await readBody(req)));
        uses = new Map();
        json(res, 200, { ok: true });
      } catch (err) {
        sendError(res, 400, `invalid script: ${(err as Error).message}`);
      }
      return;
    }
    if (req.method !== 'POST' || url.pathname !== '/v1/chat/completions') {
      sendError(res, 404, `no route for ${req.method} ${url.pathname}`);
      return;
    }
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(await readBody(req)) as Record<string, unknown>;
    } catch {
      sendError(res, 400, 'the request body is not valid JSON', 'invalid_request_error');
      return;
    }
    stats.requests++;
    stats.arrivals.push(Date.now());
    stats.bodies.push(body);
    stats.authorizations.push(req.headers.authorization);
    if (current.apiKey !== undefined && req.headers.authorization !== `Bearer ${current.apiKey}`) {
      sendError(res, 401, 'Incorrect API key provided.', 'invalid_request_error');
      return;
    }
    if (current.strictModels && !(current.models ?? [model]).includes(String(body.model))) {
      sendError(res, 404, `model '${String(body.model)}' not found`, 'not_found_error');
      return;
    }
    const messages = Array.isArray(body.messages) ? (body.messages as { role?: unknown; content?: unknown }[]) : [];
    const rule = pickRule(messages[messages.length - 1]);
    const used = (uses.get(rule) ?? 0) + 1;
    uses.set(rule, used);

    stats.active++;
    let finished = false;
    res.on('close', () => {
      stats.active--;
      if (!finished) stats.aborted++;
    });
    const closed = new Promise<void>((resolve) => res.on('close', () => resolve()));

    if (rule.status !== undefined && used <= (rule.failTimes ?? Number.POSITIVE_INFINITY)) {
      finished = true;
      sendError(res, rule.status, rule.errorMessage ?? `mock error ${rule.status}`, 'mock_error', rule.retryAfter);
      return;
    }
    if (rule.hang) {
      await closed;
      return;
    }
    if (rule.gate !== undefined && !gate(rule.gate).open) {
      const name = rule.gate;
      stats.waiting[name] = (stats.waiting[name] ?? 0) + 1;
      await Promise.race([gate(name).promise, closed]);
      stats.waiting[name] = (stats.waiting[name] ?? 1) - 1;
      if (res.destroyed || res.writableEnded) return;
    }
    const id = `chatcmpl-mock-${++sequence}`;
    const created = Math.floor(Date.now() / 1000);
    const streamedLength = rule.repeatChunk !== undefined ? rule.repeatChunk.length * (rule.repeatCount ?? 1) : undefined;
    const text = body.stream === true && streamedLength !== undefined ? '' : replyText(rule);
    const promptChars = messages.reduce((n, m) => n + (typeof m.content === 'string' ? m.content.length : 0), 0);
    const usage = rule.usage ?? { prompt_tokens: Math.ceil(promptChars / 4), completion_tokens: Math.ceil((streamedLength ?? text.length) / 4) };
    const usageBlock = { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens };

    if (body.stream !== true) {
      if (rule.delayMs) await delay(rule.delayMs, closed);
      if (res.destroyed) return;
      finished = true;
      json(res, 200, {
        id,
        object: 'chat.completion',
        created,
        model,
        choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
        usage: usageBlock,
      });
      return;
    }

    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    const event = async (data: unknown): Promise<void> => {
      const line = `data: ${JSON.stringify(data)}\n\n`;
      stats.bytesStreamed += Buffer.byteLength(line);
      if (!res.write(line)) await Promise.race([new Promise((r) => res.once('drain', r)), closed]);
    };
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
      id,
      object: 'chat.completion.chunk',
      created,
      model,
      choices: [{ index: 0, delta, finish_reason: finish }],
    });
    await event(chunk({ role: 'assistant', content: '' }));
    let i = -1;
    for (const piece of chunksOf(rule)) {
      i++;
      if (rule.hangAfterChunks !== undefined && i >= rule.hangAfterChunks) {
        await closed;
        return;
      }
      if (rule.dropAfterChunks !== undefined && i >= rule.dropAfterChunks) {
        // Let the chunks already written reach the client, then break the stream.
        await new Promise<void>((resolve) => res.write('', () => resolve()));
        finished = true;
        res.destroy();
        return;
      }
      if (rule.delayMs) await delay(rule.delayMs, closed);
      if (res.destroyed) return;
      await event(chunk({ content: piece }));
    }
    if (rule.hangAfterChunks !== undefined && i + 1 <= rule.hangAfterChunks) {
      await closed;
      return;
    }
    if (res.destroyed) return;
    if (!rule.noFinish) await event(chunk({}, 'stop'));
    const options = body.stream_options as { include_usage?: unknown } | undefined;
    if (options?.include_usage === true) await event({ id, object: 'chat.completion.chunk', created, model, choices: [], usage: usageBlock });
    finished = true;
    res.end('data: [DONE]\n\n');
  }

  function pickRule(last: { role?: unknown; content?: unknown } | undefined): MockRule {
    for (const rule of current.rules ?? []) {
      if (rule.times !== undefined && (uses.get(rule) ?? 0) >= rule.times) continue;
      if (ruleMatches(rule, last)) return rule;
    }
    return current.fallback ?? FALLBACK;
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    port,
    stats,
    setScript(script) {
      current = script;
      uses = new Map();
    },
    release,
    reset(script = {}) {
      current = script;
      uses = new Map();
      gates.clear();
      stats.modelLists = 0;
      stats.waiting = {};
      stats.requests = 0;
      stats.aborted = 0;
      stats.bodies.length = 0;
      stats.authorizations.length = 0;
      stats.arrivals.length = 0;
      stats.bytesStreamed = 0;
    },
    async waitForAborts(count, timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs;
      while (stats.aborted < count) {
        if (Date.now() > deadline) throw new Error(`mock saw ${stats.aborted} aborted requests, expected ${count}`);
        await delay(5);
      }
    },
    close() {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

const FALLBACK: MockRule = { reply: 'mock reply' };

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on('data', (b: Buffer) => parts.push(b));
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    req.on('error', reject);
  });
}

function json(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function sendError(res: http.ServerResponse, status: number, message: string, type = 'mock_error', retryAfter?: string): void {
  const text = JSON.stringify({ error: { message, type, code: null, param: null } });
  const headers: Record<string, string | number> = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) };
  if (retryAfter !== undefined) headers['retry-after'] = retryAfter;
  res.writeHead(status, headers);
  res.end(text);
}

function delay(ms: number, interrupt?: Promise<void>): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    // interrupt is the response's close, which only ever resolves.
    void interrupt?.then(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

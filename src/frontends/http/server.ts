/**
 * The HTTP server of the OpenAI-compatible front end (node:http, no framework: four
 * routes do not need one). Every route but `/healthz` needs the bearer token.
 *
 * Bounds, so that no client can hold it up: a request (headers and body) must
 * arrive within `[limits] request_read_timeout_ms`; a body is at most
 * `[http] max_body_bytes`; headers at most Node's 16 KiB; at most
 * `[limits] max_connections` connections and `[http] max_concurrent` chat
 * completions at once. A request the parser cannot read gets an error in OpenAI's
 * shape and the connection is closed; nothing a client sends can stop the server.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger, ResolvedConfig } from '../../runtime/index.js';
import { IdleCompactor, logCompaction, type IdleCompactorOptions } from '../../runtime/transport/reclaim.js';
import { ClientGone, parseJsonObject, readBody } from './body.js';
import { parseChatRequest } from './chat-request.js';
import { complete } from './completion.js';
import { HttpError, rawErrorResponse, sendError } from './errors.js';
import { HealthCheck } from './health.js';
import { isModelId, modelEntry, modelList } from './models.js';
import type { TokenCheck } from './token.js';

/** What the server needs. */
export interface FrontEndOptions {
  config: Readonly<ResolvedConfig>;
  log: Logger;
  token: TokenCheck;
  /** `created` of the models: when the front end started, in seconds since the epoch. */
  created: number;
  /** When the heap is compacted after a busy spell (runtime/transport/reclaim.ts). @default as every service: 5 s without a request */
  compaction?: Pick<IdleCompactorOptions, 'afterGrowthBytes' | 'afterGrowthRatio' | 'afterIdleMs'> | undefined;
}

/** A running front end. */
export interface FrontEnd {
  readonly server: http.Server;
  /** The token requests are checked against. */
  readonly token: TokenCheck;
  /** Chat completions being answered. */
  readonly inFlight: number;
  /**
   * Stops accepting, lets answers in progress finish for `graceMs`, then cancels the
   * rest and closes every connection. Safe to call twice.
   */
  close(graceMs: number): Promise<void>;
}

const REQUEST_ID = /^[\w.:@/-]{1,128}$/;

/** Builds the server (not listening yet). */
export function createFrontEnd(options: FrontEndOptions): FrontEnd {
  const { config, log, token } = options;
  const readTimeout = config.limits.request_read_timeout_ms;
  const server = http.createServer({
    requestTimeout: readTimeout,
    headersTimeout: readTimeout,
    // Node checks the two timeouts above only this often (30 s by default).
    connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(readTimeout / 4))),
    keepAliveTimeout: 5000,
  });
  server.maxConnections = config.limits.max_connections;
  const health = new HealthCheck(config);
  const active = new Set<AbortController>();
  let inFlight = 0;
  // As every service does after a burst (reclaim.ts), counted in requests: a client's idle
  // keep-alive connection holds nothing of a request, and may stay open for seconds.
  let open = 0;
  const compactor = new IdleCompactor(Object.assign({}, options.compaction, { openConnections: () => open, onCompact: logCompaction(log) }));

  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    open++;
    res.once('close', () => {
      if (--open === 0 && !closing) compactor.idle();
    });
    const given = req.headers['x-request-id'];
    const requestId = typeof given === 'string' && REQUEST_ID.test(given) ? given : `http-${randomBytes(6).toString('hex')}`;
    const reqLog = log.child({ request_id: requestId });
    res.setHeader('x-request-id', requestId);
    route(req, res, reqLog, requestId).catch((err: unknown) => {
      // A bug: the client gets a generic 500, the log the error.
      reqLog.error({ err }, 'request failed unexpectedly');
      if (!res.headersSent) fail(req, res, new HttpError(500, 'internal error (see the zino-http log)', 'server_error', 'internal_error'));
      else res.destroy();
    });
  });

  server.on('clientError', (err: NodeJS.ErrnoException, socket: net.Socket) => {
    const current = (socket as net.Socket & { _httpMessage?: http.ServerResponse | null })._httpMessage;
    if (err.code === 'ECONNRESET' || !socket.writable || current?.headersSent === true) {
      socket.destroy();
      return;
    }
    const error =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? new HttpError(431, 'the request headers are too large', 'invalid_request_error', 'headers_too_large')
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? new HttpError(408, `the request did not arrive within ${readTimeout} ms`, 'invalid_request_error', 'request_timeout')
          : new HttpError(400, 'the request is not valid HTTP', 'invalid_request_error', 'bad_request');
    log.debug({ code: err.code, status: error.status }, 'unreadable request');
    socket.end(rawErrorResponse(error));
  });

  async function route(req: http.IncomingMessage, res: http.ServerResponse, reqLog: Logger, requestId: string): Promise<void> {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const method = req.method ?? 'GET';
    if (path === '/healthz') {
      if (method !== 'GET' && method !== 'HEAD') return fail(req, res, notAllowed('GET, HEAD'));
      const state = await health.check();
      const text = JSON.stringify({ status: state });
      res.writeHead(state === 'unavailable' ? 503 : 200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(method === 'HEAD' ? undefined : text);
      return;
    }
    if (!token.matches(req.headers.authorization)) {
      reqLog.info({ path, given: req.headers.authorization !== undefined }, 'refused: no or wrong token');
      return fail(
        req,
        res,
        new HttpError(
          401,
          'Missing or incorrect API key: send "Authorization: Bearer TOKEN" with the token of [http] token_file',
          'invalid_request_error',
          'invalid_api_key',
          null,
          { 'www-authenticate': 'Bearer' },
        ),
      );
    }
    if (path === '/v1/models') {
      if (method !== 'GET') return fail(req, res, notAllowed('GET'));
      return json(res, modelList(options.created));
    }
    if (path.startsWith('/v1/models/')) {
      if (method !== 'GET') return fail(req, res, notAllowed('GET'));
      const id = decodeURIComponentSafe(path.slice('/v1/models/'.length));
      if (!isModelId(id)) return fail(req, res, new HttpError(404, `The model \`${id}\` does not exist`, 'invalid_request_error', 'model_not_found', 'model'));
      return json(res, modelEntry(id, options.created));
    }
    if (path === '/v1/chat/completions') {
      if (method !== 'POST') return fail(req, res, notAllowed('POST'));
      return chat(req, res, reqLog, requestId);
    }
    return fail(req, res, new HttpError(404, `Unknown request URL: ${method} ${path}`, 'invalid_request_error', 'unknown_url'));
  }

  async function chat(req: http.IncomingMessage, res: http.ServerResponse, reqLog: Logger, requestId: string): Promise<void> {
    if (inFlight >= config.http.max_concurrent) {
      reqLog.warn({ inFlight, max: config.http.max_concurrent }, 'refused: too many chat completions at once');
      return fail(
        req,
        res,
        new HttpError(
          429,
          `ZINO is answering ${inFlight} requests already ([http] max_concurrent = ${config.http.max_concurrent}); try again shortly`,
          'rate_limit_error',
          'rate_limit_exceeded',
          null,
          { 'retry-after': '1' },
        ),
      );
    }
    inFlight++;
    const controller = new AbortController();
    active.add(controller);
    const onClose = (): void => {
      if (!res.writableFinished) controller.abort();
    };
    res.on('close', onClose);
    try {
      const job = parseChatRequest(parseJsonObject(await readBody(req, config.http.max_body_bytes)), req.headers);
      await complete(job, res, { config, log: reqLog, requestId, signal: controller.signal });
    } catch (err) {
      if (err instanceof ClientGone) return;
      if (!(err instanceof HttpError)) throw err;
      reqLog.info({ status: err.status, code: err.code, reason: err.message }, 'chat completion refused');
      fail(req, res, err);
    } finally {
      res.off('close', onClose);
      active.delete(controller);
      inFlight--;
    }
  }

  let closing: Promise<void> | undefined;
  return {
    server,
    token,
    get inFlight() {
      return inFlight;
    },
    close(graceMs) {
      closing ??= (async () => {
        compactor.stop();
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        const deadline = performance.now() + graceMs;
        while (inFlight > 0 && performance.now() < deadline) await sleep(20);
        for (const controller of active) controller.abort();
        server.closeAllConnections();
        await closed;
      })();
      return closing;
    },
  };
}

/** Sends `err`; when the request body was not read, the connection is closed rather than the body read to throw it away. */
function fail(req: http.IncomingMessage, res: http.ServerResponse, err: HttpError): void {
  if (res.headersSent || res.destroyed) {
    res.destroy();
    return;
  }
  if (!req.complete) res.setHeader('connection', 'close');
  sendError(res, err);
}

function notAllowed(allow: string): HttpError {
  return new HttpError(405, `Method not allowed here: use ${allow}`, 'invalid_request_error', 'method_not_allowed', null, { allow });
}

function json(res: http.ServerResponse, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

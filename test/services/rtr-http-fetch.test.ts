/**
 * rtr's `fetch` over node:http (src/services/rtr/http-fetch.ts), against a real HTTP
 * server in this process, and under the real openai SDK against the project's mock LLM
 * over real HTTP: what the server receives, how bodies stream and end, keep-alive, and
 * the errors the SDK and rtr read (errno codes, AbortError, a body cut short).
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import OpenAI, { APIConnectionError, APIError } from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { nodeFetch } from '../../src/services/rtr/http-fetch.js';
import { startMockLlm, type MockLlm } from '../../src/testing/mock-llm/server.js';
import { waitFor } from '../helpers/util.js';

type Handler = (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void;

interface TestServer {
  url: string;
  /** Every request as the server saw it. */
  seen: { method: string; url: string; headers: http.IncomingHttpHeaders; body: string; socket: number }[];
  /** Connections accepted so far. */
  connections: () => number;
  close: () => Promise<void>;
}

const servers: TestServer[] = [];
let mock: MockLlm | undefined;

afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
  await mock?.close();
  mock = undefined;
});

async function serve(handler: Handler): Promise<TestServer> {
  const sockets: Socket[] = [];
  const seen: TestServer['seen'] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => (body += d));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body, socket: sockets.indexOf(req.socket) });
      handler(req, res, body);
    });
  });
  server.on('connection', (s) => sockets.push(s));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const s: TestServer = {
    url: `http://127.0.0.1:${port}`,
    seen,
    connections: () => sockets.length,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
  servers.push(s);
  return s;
}

describe("rtr's fetch over node:http", () => {
  it('sends method, headers and a string body with its content-length (no chunked body, no compression)', async () => {
    const server = await serve((_req, res) => res.end('{"ok":true}'));
    const fetch = nodeFetch();
    const body = JSON.stringify({ text: 'héllo' });
    const res = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: new Headers({ 'Content-Type': 'application/json', Authorization: 'Bearer k' }),
      body,
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true });
    const [req] = server.seen;
    expect(req?.method).toBe('POST');
    expect(req?.url).toBe('/v1/chat/completions');
    expect(req?.body).toBe(body);
    expect(req?.headers['content-type']).toBe('application/json');
    expect(req?.headers.authorization).toBe('Bearer k');
    expect(req?.headers['content-length']).toBe(String(Buffer.byteLength(body)));
    expect(req?.headers['transfer-encoding']).toBeUndefined();
    expect(req?.headers['accept-encoding']).toBe('identity');
  });

  it('gives the status, status text and every response header, repeated ones too', async () => {
    const server = await serve((_req, res) => {
      res.setHeader('Set-Cookie', ['a=1', 'b=2']);
      res.setHeader('Retry-After', '3');
      res.writeHead(429, 'Slow Down', { 'Content-Type': 'application/json' });
      res.end('{"error":{"message":"rate limited"}}');
    });
    const res = await nodeFetch()(server.url);
    expect(res.status).toBe(429);
    expect(res.statusText).toBe('Slow Down');
    expect(res.headers.get('retry-after')).toBe('3');
    expect(res.headers.getSetCookie()).toEqual(['a=1', 'b=2']);
    expect(await res.text()).toBe('{"error":{"message":"rate limited"}}');
  });

  it('streams the body as it arrives, before the response ends', async () => {
    let finish: (() => void) | undefined;
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.write('data: one\n\n');
      finish = () => res.end('data: two\n\n');
    });
    const res = await nodeFetch()(server.url);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const first = await reader.read();
    expect(Buffer.from(first.value as Uint8Array).toString()).toBe('data: one\n\n');
    finish?.();
    let rest = '';
    for (let r = await reader.read(); !r.done; r = await reader.read()) rest += Buffer.from(r.value).toString();
    expect(rest).toBe('data: two\n\n');
  });

  it('follows a redirect, keeping the method and the body (307)', async () => {
    const target = await serve((_req, res, body) => res.end(`moved here: ${body}`));
    const server = await serve((_req, res) => {
      res.writeHead(307, { Location: `${target.url}/v1/chat/completions` });
      res.end();
    });
    const res = await nodeFetch()(`${server.url}/v1/chat/completions`, { method: 'POST', body: '{"a":1}' });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('moved here: {"a":1}');
    expect(target.seen[0]).toMatchObject({ method: 'POST', url: '/v1/chat/completions' });
  });

  it('answers a 204 with no body', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(204);
      res.end();
    });
    const res = await nodeFetch()(server.url, { method: 'DELETE' });
    expect(res.status).toBe(204);
    expect(res.body).toBeNull();
  });

  it('keeps the connection alive between requests', async () => {
    const server = await serve((_req, res) => res.end('x'));
    const fetch = nodeFetch();
    for (let i = 0; i < 3; i++) expect(await (await fetch(server.url)).text()).toBe('x');
    expect(server.connections()).toBe(1);
    expect(server.seen.map((r) => r.socket)).toEqual([0, 0, 0]);
  });

  it('does not reuse a connection the server says it keeps for under a second', async () => {
    const server = await serve((_req, res) => {
      res.setHeader('Keep-Alive', 'timeout=1');
      res.end('x');
    });
    const fetch = nodeFetch();
    await (await fetch(server.url)).text();
    await (await fetch(server.url)).text();
    expect(server.connections()).toBe(2);
  });

  it('rejects with the errno error when nothing listens', async () => {
    const server = await serve((_req, res) => res.end());
    const url = server.url;
    await server.close();
    servers.splice(servers.indexOf(server), 1);
    await expect(nodeFetch()(url)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });

  it('rejects with an AbortError when aborted before the response, and errors the body when aborted during it', async () => {
    const server = await serve((_req, res) => {
      if (server.seen.length === 1) return; // the first request never gets an answer
      res.writeHead(200);
      res.write('part');
    });
    const fetch = nodeFetch();
    const early = new AbortController();
    const pending = fetch(server.url, { signal: early.signal });
    await waitFor(() => server.seen.length === 1, 'the first request at the server');
    early.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });

    const late = new AbortController();
    const res = await fetch(server.url, { signal: late.signal });
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    expect(Buffer.from((await reader.read()).value as Uint8Array).toString()).toBe('part');
    late.abort();
    await expect(reader.read()).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('errors the body when the server closes in the middle of it', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'Content-Length': '100' });
      res.write('only part of it');
      setImmediate(() => res.socket?.destroy());
    });
    const res = await nodeFetch()(server.url);
    await expect(res.text()).rejects.toThrow();
  });

  it('hands a streamed request body to the global fetch', async () => {
    const server = await serve((_req, res) => res.end('got it'));
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode('streamed'));
        c.close();
      },
    });
    const res = await nodeFetch()(server.url, { method: 'POST', body, duplex: 'half' });
    expect(await res.text()).toBe('got it');
    expect(server.seen[0]?.body).toBe('streamed');
  });
});

describe('the openai SDK over it, against the mock LLM', () => {
  it('streams a reply, lists models and reads API errors as it does over the global fetch', async () => {
    mock = await startMockLlm({ rules: [{ reply: 'The short answer is yes, it works.', chunkSize: 4 }] });
    const client = new OpenAI({ baseURL: mock.baseUrl, apiKey: 'k', maxRetries: 0, fetch: nodeFetch() });
    const stream = await client.chat.completions.create({
      model: 'm',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'hi' }],
    });
    let text = '';
    let usage = false;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      if (chunk.usage) usage = true;
    }
    expect(text).toBe('The short answer is yes, it works.');
    expect(usage).toBe(true);
    expect((await client.models.list()).data.length).toBeGreaterThan(0);

    const wrongKey = new OpenAI({ baseURL: `${mock.baseUrl.replace(/\/v1$/, '')}/nowhere`, apiKey: 'k', maxRetries: 0, fetch: nodeFetch() });
    await expect(wrongKey.models.list()).rejects.toBeInstanceOf(APIError);
    const unreachable = new OpenAI({ baseURL: 'http://127.0.0.1:1/v1', apiKey: 'k', maxRetries: 0, fetch: nodeFetch() });
    const err = await unreachable.models.list().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(APIConnectionError);
    expect(((err as Error).cause as NodeJS.ErrnoException | undefined)?.code).toBe('ECONNREFUSED');
  });
});

/**
 * Hostile input on raw TCP connections to `zino serve http`: bytes no HTTP client
 * library would send. After each, the server is still up and answers the next
 * request. No suite behind it: `GET /v1/models` needs none.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpFrontEnd, type StartedHttp } from '../../src/testing/http.js';
import { writeTestConfig } from '../../src/testing/suite.js';
import { tempDir } from '../helpers/util.js';

let http: StartedHttp;
let cleanup: () => void;

beforeAll(async () => {
  const made = tempDir('zhttpx');
  cleanup = made.cleanup;
  const { file } = writeTestConfig(made.dir, {
    http: { listen: '127.0.0.1:0', max_body_bytes: 64 * 1024 },
    // How long a request may take to arrive: short, so that slow clients are seen off within the test.
    limits: { request_read_timeout_ms: 1000 },
  });
  http = await startHttpFrontEnd(file);
});

afterAll(async () => {
  expect(await http.stop()).toEqual({ code: 0, signal: null });
  cleanup();
});

/** Connects to the front end. */
function connect(): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(http.port, '127.0.0.1', () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Everything the server sends until it closes the connection. */
function readUntilClosed(socket: net.Socket): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (s: string) => (text += s));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(text));
  });
}

/** Sends `bytes` (and keeps the connection open), resolves with the whole response once the server closes. */
async function exchange(bytes: string | Buffer): Promise<string> {
  const socket = await connect();
  const response = readUntilClosed(socket);
  socket.write(bytes);
  return response;
}

/** The status and JSON body of a raw response. */
function parse(response: string): { status: number; body: unknown } {
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(response)?.[1]);
  const body = response.slice(response.indexOf('\r\n\r\n') + 4);
  return { status, body: JSON.parse(body) };
}

const auth = (): string => `Authorization: Bearer ${http.token}\r\n`;

function post(body: string | Buffer, headers = ''): Buffer {
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body);
  const head = `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n${auth()}Content-Type: application/json\r\nContent-Length: ${bytes.length}\r\nConnection: close\r\n${headers}\r\n`;
  return Buffer.concat([Buffer.from(head), bytes]);
}

/** The next request is answered: the server is alive and well. */
async function stillServing(): Promise<void> {
  const res = await fetch(`${http.baseUrl}/models`, { headers: { authorization: `Bearer ${http.token}` } });
  expect(res.status).toBe(200);
  expect(((await res.json()) as { data: unknown[] }).data).toHaveLength(3);
  expect(http.child.exitCode).toBeNull();
}

describe('hostile input', () => {
  it('answers malformed JSON with 400 in OpenAI shape', async () => {
    for (const body of ['{"model": "zino", "messages": [', 'null', '[1,2]', '', '"x"', '{"model":"zino","messages":[{"role":"user","content":"hi"}]}garbage']) {
      const { status, body: error } = parse(await exchange(post(body)));
      expect(status, body).toBe(400);
      expect(error).toMatchObject({ error: { message: expect.any(String), type: 'invalid_request_error', param: null } });
    }
    await stillServing();
  });

  it('answers a body that is not UTF-8 with 400', async () => {
    const body = Buffer.concat([Buffer.from('{"model":"zino","messages":[{"role":"user","content":"'), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('"}]}')]);
    const { status, body: error } = parse(await exchange(post(body)));
    expect(status).toBe(400);
    expect(error).toMatchObject({ error: { message: 'the request body is not valid UTF-8', code: 'invalid_body' } });
    await stillServing();
  });

  it('answers huge headers with 431 and closes', async () => {
    const response = await exchange(`GET /v1/models HTTP/1.1\r\nHost: x\r\n${auth()}X-Big: ${'a'.repeat(100_000)}\r\n\r\n`);
    expect(parse(response)).toEqual({ status: 431, body: { error: expect.objectContaining({ code: 'headers_too_large' }) } });
    await stillServing();
  });

  it('answers bytes that are not HTTP with 400 and closes', async () => {
    const response = await exchange('GARBAGE \x00\x01\x02 NOT HTTP\r\n\r\n');
    expect(parse(response)).toEqual({ status: 400, body: { error: expect.objectContaining({ code: 'bad_request' }) } });
    await stillServing();
  });

  it('refuses a declared body over max_body_bytes with 413 before reading it', async () => {
    const socket = await connect();
    const response = readUntilClosed(socket);
    // A gigabyte announced, 10 bytes sent: the answer comes without waiting for the rest.
    socket.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n${auth()}Content-Length: 1000000000\r\n\r\n0123456789`);
    const { status, body } = parse(await response);
    expect(status).toBe(413);
    expect(body).toMatchObject({ error: { code: 'request_too_large' } });
    await stillServing();
  });

  it('answers a chunked body past max_body_bytes with 413 (the rest dropped, so the answer is not lost to a reset)', async () => {
    const socket = await connect();
    const response = readUntilClosed(socket);
    socket.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n${auth()}Transfer-Encoding: chunked\r\n\r\n`);
    const piece = 'x'.repeat(16 * 1024);
    for (let i = 0; i < 8 && !socket.destroyed; i++) socket.write(`${piece.length.toString(16)}\r\n${piece}\r\n`);
    if (!socket.destroyed) socket.write('0\r\n\r\n');
    const { status } = parse(await response);
    expect(status).toBe(413);
    await stillServing();
  });

  it('closes a connection whose body stops coming (408 once [limits] request_read_timeout_ms has passed)', async () => {
    const socket = await connect();
    const response = readUntilClosed(socket);
    socket.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n${auth()}Content-Length: 100\r\n\r\n{"model":`);
    const text = await response;
    expect(text).toMatch(/^HTTP\/1\.1 408 /);
    expect(parse(text).body).toMatchObject({ error: { code: 'request_timeout' } });
    await stillServing();
  });

  it('closes a connection whose headers stop coming', async () => {
    const socket = await connect();
    const response = readUntilClosed(socket);
    socket.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Slow: `);
    expect(await response).toMatch(/^HTTP\/1\.1 408 /);
    await stillServing();
  });

  it('keeps answering while 1,000 connections send nothing, and closes them all', async () => {
    const sockets = await Promise.all(Array.from({ length: 1000 }, () => connect()));
    const closed = sockets.map((s) => readUntilClosed(s));
    await stillServing();
    // Each is closed by the server (none by us), after the read timeout.
    await Promise.all(closed);
    expect(sockets.every((s) => s.destroyed)).toBe(true);
    await stillServing();
  });
});

/**
 * Hostile inputs for a service: bytes that break the framing, frames that are not
 * requests, and requests of the right type with missing or wrongly typed fields.
 * Every input is built so that no valid request can come out of it (a valid one
 * would make the service do real work: call the LLM, run code, store data).
 */

/** A field of a request and the JSON kind it must have. */
type Kind = 'string' | 'number' | 'integer' | 'boolean' | 'messages';

/** Request types and their fields; `required` fields are the ones made invalid. */
export interface RequestShape {
  type: string | undefined;
  required: Record<string, Kind>;
  optional?: Record<string, Kind>;
}

/** The requests of every service that take fields (those without fields cannot be made invalid). */
export const SHAPES: Record<string, RequestShape[]> = {
  daemon: [
    { type: undefined, required: { message: 'string' }, optional: { channel_id: 'string', stream: 'boolean', events: 'boolean', approvals: 'boolean' } },
    { type: 'approve', required: { id: 'string', decision: 'string' }, optional: { note: 'string' } },
  ],
  rtr: [{ type: 'infer', required: { messages: 'messages' }, optional: { temperature: 'number', top_p: 'number', stream: 'boolean' } }],
  agr: [
    {
      type: 'run',
      required: { messages: 'messages' },
      optional: { temperature: 'number', top_p: 'number', max_iterations: 'integer', stream: 'boolean', approvals: 'boolean', channel_id: 'string' },
    },
  ],
  sys: [{ type: 'set_soft_memory', required: { content: 'string' } }],
  exc: [
    { type: 'execute', required: { executor: 'string', code: 'string' }, optional: { host: 'boolean', reason: 'string', approvals: 'boolean' } },
    { type: 'approve', required: { id: 'string', decision: 'string' }, optional: { note: 'string' } },
    { type: 'validate', required: { executor: 'string', code: 'string' } },
  ],
  mem: [
    { type: 'get_history', required: { channel_id: 'string' }, optional: { limit: 'integer' } },
    { type: 'append_history', required: { channel_id: 'string', messages: 'messages' } },
    { type: 'clear_history', required: { channel_id: 'string' } },
    { type: 'search_hard', required: { query: 'string' }, optional: { top_k: 'integer' } },
    { type: 'store_hard', required: { messages: 'messages' }, optional: { tag: 'string' } },
    { type: 'set_soft', required: { content: 'string' } },
  ],
  ctx: [{ type: 'build', required: { user_message: 'string' }, optional: { channel_id: 'string' } }],
};

function header(length: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(length >>> 0);
  return b;
}

function frame(body: Buffer | string): Buffer {
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8');
  return Buffer.concat([header(bytes.length), bytes]);
}

/** Names of the input categories, for the report. */
export const CATEGORIES = [
  'random bytes',
  'length over the cap',
  'truncated frame',
  'invalid UTF-8',
  'JSON not an object',
  'deeply nested JSON',
  'wrong field types',
  'missing fields',
  'unknown or hostile type',
  'huge string under the cap',
] as const;

/** One hostile input. */
export interface Hostile {
  category: (typeof CATEGORIES)[number];
  bytes: Buffer;
}

/** Every this many inputs one is a huge string (MiBs each: a few dozen test the path, thousands only the disk). */
const HUGE_EVERY = 500;

/** Generates hostile input number `n` for `service` (n cycles through the other categories). */
export function hostile(service: string, n: number, random: () => number, maxFrameBytes: number): Hostile {
  const category = n % HUGE_EVERY === HUGE_EVERY - 1 ? 'huge string under the cap' : (CATEGORIES[n % (CATEGORIES.length - 1)] as Hostile['category']);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)] as T;
  const shapes = SHAPES[service] ?? [];
  switch (category) {
    case 'random bytes': {
      const bytes = Buffer.alloc(1 + Math.floor(random() * 64));
      for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(random() * 256);
      return { category, bytes };
    }
    case 'length over the cap':
      return { category, bytes: Buffer.concat([header(maxFrameBytes + 1 + Math.floor(random() * 0x7fff_0000)), Buffer.from('{"type":')]) };
    case 'truncated frame': {
      const whole = frame(JSON.stringify({ type: pick(shapes)?.type ?? 'x', pad: 'y'.repeat(Math.floor(random() * 200)) }));
      return { category, bytes: whole.subarray(0, 1 + Math.floor(random() * (whole.length - 1))) };
    }
    case 'invalid UTF-8': {
      const bad = pick([[0xc3, 0x28], [0xa0, 0xa1], [0xe2, 0x28, 0xa1], [0xf0, 0x28, 0x8c, 0x28], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xff]]);
      return { category, bytes: frame(Buffer.concat([Buffer.from('{"type":"'), Buffer.from(bad), Buffer.from('"}')])) };
    }
    case 'JSON not an object':
      return {
        category,
        bytes: frame(pick(['[]', '[{"type":"ping"}]', '"ping"', '42', 'null', 'true', '""', '1e999', '{"type":"ping"}{"type":"ping"}', ' '])),
      };
    case 'deeply nested JSON': {
      const depth = 1000 + Math.floor(random() * 100_000);
      return { category, bytes: frame(`{"type":${'['.repeat(depth)}${']'.repeat(depth)}}`) };
    }
    case 'wrong field types':
    case 'missing fields': {
      const shape = pick(shapes);
      if (!shape) return { category, bytes: frame('{"type":7}') };
      return { category, bytes: frame(JSON.stringify(invalidRequest(shape, category === 'missing fields', random))) };
    }
    case 'unknown or hostile type':
      return {
        category,
        bytes: frame(
          JSON.stringify({
            type: pick(['__proto__', 'constructor', 'toString', 'hasOwnProperty', '../../etc/passwd', 'PING', 'ping ', '', '\u0000', 'x'.repeat(10_000), '🎉']),
            message: 5,
          }),
        ),
      };
    case 'huge string under the cap': {
      const size = (1 + Math.floor(random() * 3)) * 1024 * 1024;
      const shape = pick(shapes);
      const field = shape ? (Object.keys(shape.required)[0] ?? 'x') : 'x';
      const request: Record<string, unknown> = { [field]: { huge: 'h'.repeat(size) } };
      if (shape?.type !== undefined) request.type = shape.type;
      return { category, bytes: frame(JSON.stringify(request)) };
    }
  }
}

function wrongValue(kind: Kind, random: () => number): unknown {
  const options: unknown[] = {
    string: [5, true, [], { a: 1 }, ['s'], 1.5],
    number: ['0.7', true, [], {}, 'NaN', [1]],
    integer: [1.5, '3', true, [], {}, -0.5],
    boolean: ['true', 1, 0, [], {}, 'yes'],
    messages: ['hi', 5, {}, [1], [{ role: 'user' }], [{ role: 'user', content: 5 }], [{ role: '', content: 'x' }], [null], [{ content: 'x' }]],
  }[kind];
  return options[Math.floor(random() * options.length)];
}

function validValue(kind: Kind, random: () => number): unknown {
  switch (kind) {
    case 'string':
      return `s${Math.floor(random() * 1000)}`;
    case 'number':
      return 0.5;
    case 'integer':
      return 2;
    case 'boolean':
      return random() < 0.5;
    case 'messages':
      return [{ role: 'user', content: 'hello' }];
  }
}

/** A request of `shape` in which at least one required field is missing (or wrongly typed). */
function invalidRequest(shape: RequestShape, missing: boolean, random: () => number): Record<string, unknown> {
  const request: Record<string, unknown> = shape.type === undefined ? {} : { type: shape.type };
  const required = Object.entries(shape.required);
  const broken = Math.floor(random() * required.length);
  required.forEach(([field, kind], i) => {
    if (i === broken) {
      if (!missing) request[field] = wrongValue(kind, random);
    } else request[field] = random() < 0.5 ? validValue(kind, random) : wrongValue(kind, random);
  });
  for (const [field, kind] of Object.entries(shape.optional ?? {})) {
    const roll = random();
    if (roll < 0.3) request[field] = validValue(kind, random);
    else if (roll < 0.6) request[field] = wrongValue(kind, random);
  }
  if (random() < 0.2) request.request_id = random() < 0.5 ? 'x'.repeat(500) : { nested: true };
  return request;
}

/**
 * Messages bound to their types, in the spirit of vscode-jsonrpc's `RequestType<P, R>`:
 * one constant per message names its wire `type` and carries (as phantom types) the
 * request, the terminal reply and the frames that may come before the reply. Each
 * service lists its messages in one object in `src/protocol/<service>.ts`; handlers
 * ({@link bindHandlers}) and callers (`Endpoint`, the client library) are typed from it,
 * so a handler whose reply does not match its message does not compile.
 */
import { ZinoError, type ErrorFrame } from './errors.js';
import type { Frame, OutgoingFrame } from './frame/codec.js';
import type { Handler, HandlerContext } from './transport/connection.js';

/**
 * One message of a service. `Req` is the request as a client builds it, `Reply` the
 * terminal reply (a union when it has several forms), `Progress` the non-terminal
 * frames (`chunk`, events) a streamed exchange sends first.
 */
export interface Message<Req, Reply extends OutgoingFrame, Progress extends OutgoingFrame = never> {
  /** The wire `type` of the request, or `null` for a request without one (the daemon's ask). */
  readonly type: string | null;
  /** The `type`s of the terminal reply; an `error` frame is always possible too. */
  readonly replies: readonly string[];
  /**
   * The reply may come without a `type` (the contract's rtr `capabilities` reply has
   * none); such a frame is taken as the reply and given `replies[0]` as its type.
   */
  readonly untypedReply: boolean;
  /** Phantom member carrying the types; never set at run time. */
  readonly types?: { request: Req; reply: Reply; progress: Progress };
}

/**
 * Declares a message. `replies` names every `type` its terminal reply may have, each
 * as a key (`{ done: true, response: true }`): a reply type of the union left out of it
 * does not compile.
 */
export function message<Req, Reply extends OutgoingFrame, Progress extends OutgoingFrame = never>(
  type: string | null,
  replies: { readonly [T in Reply['type']]: true },
  options: { untypedReply?: boolean } = {},
): Message<Req, Reply, Progress> {
  return { type, replies: Object.keys(replies), untypedReply: options.untypedReply ?? false };
}

/** The messages of one service, by name. */
export type Protocol = Readonly<Record<string, AnyMessage>>;

/** Any message, whatever its types. */
export type AnyMessage = Message<unknown, OutgoingFrame, OutgoingFrame>;

/** The request type of a message. */
export type RequestOf<M> = M extends { readonly types?: { request: infer Req } } ? Req : never;
/** The terminal reply type of a message (without the always-possible error frame). */
export type ReplyOf<M> = M extends { readonly types?: { reply: infer Reply } } ? Reply : never;
/** The non-terminal frames of a message. */
export type ProgressOf<M> = M extends { readonly types?: { progress: infer Progress } } ? Progress : never;
/** A request without its `type` (which the message supplies). */
export type BodyOf<M> = Omit<RequestOf<M>, 'type'>;

/**
 * A request as it arrives: only the declared fields may be read, and each is `unknown`
 * until a validator (`requireString`, `optionalInteger`, …) has checked it.
 */
export type Unvalidated<Req> = { readonly [K in keyof Req]?: unknown };

/** The handler of one message: validates its request, answers its reply, sends only its progress frames. */
export type MessageHandler<M> = (
  request: Unvalidated<RequestOf<M>>,
  ctx: HandlerContext<ProgressOf<M> & OutgoingFrame>,
) => Promise<ReplyOf<M> | ErrorFrame> | ReplyOf<M> | ErrorFrame;

/** One handler per message of `P`. */
export type HandlersOf<P extends Protocol> = { readonly [K in keyof P]: MessageHandler<P[K]> };

/** What the runtime server takes: handlers by wire type, and the handler of the untyped request. */
export interface BoundHandlers {
  handlers: Readonly<Record<string, Handler>>;
  untyped?: Handler;
}

/**
 * Routes `protocol`'s messages to handlers by wire type, for `runService`:
 * `bindHandlers(MEM)({ get_history: …, … })`. Two calls rather than one with two
 * arguments: with `P` already fixed, TypeScript types each handler's reply from its
 * message (a literal `type: 'ok'` stays a literal), which it does not do while it is
 * still inferring `P` from the same call.
 */
export function bindHandlers<P extends Protocol>(protocol: P): (handlers: HandlersOf<P>) => BoundHandlers {
  return (handlers) => route(protocol, handlers);
}

function route<P extends Protocol>(protocol: P, handlers: HandlersOf<P>): BoundHandlers {
  const byType: Record<string, Handler> = {};
  let untyped: Handler | undefined;
  for (const name of Object.keys(protocol)) {
    const msg = protocol[name];
    const handler: Handler | undefined = handlers[name];
    if (!msg || !handler) throw new ZinoError('INTERNAL', `no handler for message "${name}"`);
    if (msg.type === null) untyped = handler;
    else byType[msg.type] = handler;
  }
  return untyped ? { handlers: byType, untyped } : { handlers: byType };
}

/** True when `frame` is one of `msg`'s terminal replies (or an error frame). */
export function isTerminalOf(msg: AnyMessage, frame: Frame): boolean {
  return frame.type === 'error' || (typeof frame.type === 'string' && msg.replies.includes(frame.type));
}

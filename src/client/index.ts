/**
 * The public API of the `zino` package: `import { ZinoClient } from 'zino'`.
 *
 * - {@link ZinoClient}: one typed method per message of every service.
 * - Errors: every failure is a {@link ZinoError} with a stable `code` (one of
 *   {@link ERROR_CODES}) and structured `detail`; an error frame from a service is a
 *   {@link RemoteError} carrying the service's code.
 * - The wire types of every service, and each service's message table (`MEM`, `RTR`,
 *   …) for {@link Endpoint}, the typed low-level caller.
 * - {@link encodeFrame} / {@link FrameDecoder}: the framing, for programs that bring
 *   their own sockets.
 */
export { ZinoClient, type AskOptions, type AskStreamOptions, type ZinoClientOptions } from './client.js';
export type { ApprovalAnswer, ApprovalHandler, ApprovalOptions } from './approvals.js';
export {
  AgrClient,
  CtxClient,
  ExcClient,
  MemClient,
  RtrClient,
  SysClient,
  type CallOptions,
  type InferOptions,
  type RunOptions,
  type SamplingOptions,
} from './services.js';
export {
  ERROR_CODES,
  Endpoint,
  type EndpointCallOptions,
  FrameDecoder,
  RemoteError,
  SERVICE_NAMES,
  ZinoError,
  encodeFrame,
  isErrorCode,
  loadConfig,
  type ChatMessage,
  type ErrorCode,
  type ErrorDetail,
  type ErrorFrame,
  type ErrorPhase,
  type Frame,
  type ResolvedConfig,
  type ServiceName,
} from '../runtime/index.js';
export * from '../protocol/agr.js';
export * from '../protocol/common.js';
export * from '../protocol/ctx.js';
export * from '../protocol/daemon.js';
export * from '../protocol/exc.js';
export * from '../protocol/mem.js';
export {
  RTR,
  type ChunkFrame,
  type DoneFrame as RtrDoneFrame,
  type InferRequest,
  type LlmProbe,
  type ResponseFrame as RtrResponseFrame,
  type RtrCapabilities,
  type RtrCapabilitiesRequest,
  type Usage,
} from '../protocol/rtr.js';
export * from '../protocol/sys.js';

/**
 * Wire types of zino-mem (contract section "zino-mem"): chat history per channel,
 * hard memories with TF-IDF search, and one soft memory string.
 *
 * Every request may carry `request_id` (passed on for log correlation). Errors are
 * `{"type":"error","message","code"}` with `code` INVALID_REQUEST for bad input.
 */
import { InvalidRequestError, message, type ChatMessage, type ErrorFrame } from '../runtime/index.js';

/** Largest `channel_id`, in UTF-8 bytes; longer ids are refused with INVALID_REQUEST. */
export const MAX_CHANNEL_ID_BYTES = 256;

/** With the u flag a surrogate pair is one code point, so this matches only lone surrogates. */
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Checks a channel id: a non-empty, well-formed Unicode string of at most
 * {@link MAX_CHANNEL_ID_BYTES} UTF-8 bytes. Throws INVALID_REQUEST otherwise.
 * (A lone surrogate would encode to U+FFFD and share a file with the real U+FFFD.)
 * The daemon checks with the same rule before it does any work.
 */
export function checkChannelId(id: string, field = 'channel_id'): void {
  if (id === '') throw new InvalidRequestError(`field "${field}" must not be empty`);
  if (LONE_SURROGATE.test(id)) throw new InvalidRequestError(`field "${field}" must be well-formed Unicode (it holds a lone surrogate)`);
  const bytes = Buffer.byteLength(id, 'utf8');
  if (bytes > MAX_CHANNEL_ID_BYTES) throw new InvalidRequestError(`field "${field}" must be at most ${MAX_CHANNEL_ID_BYTES} UTF-8 bytes, got ${bytes}`);
}

/** Default `top_k` of `search_hard`. */
export const DEFAULT_TOP_K = 3;

/** `→ {"type":"get_history","channel_id","limit"?}`; `limit` 0 or absent returns everything. */
export interface GetHistoryRequest {
  type: 'get_history';
  channel_id: string;
  /** The N most recent messages; 0 or absent = all. Non-negative integer. */
  limit?: number | null | undefined;
  request_id?: string | undefined;
}

/**
 * `← {"type":"history","messages":[...]}`, oldest first. When the messages asked
 * for would not fit in one frame, the most recent ones that fit, with the ZINO
 * extras `truncated: true` and `omitted` (how many older ones were left out).
 */
export interface HistoryReply {
  type: 'history';
  messages: ChatMessage[];
  truncated?: true;
  omitted?: number;
}

/** `→ {"type":"append_history","channel_id","messages"}`; the messages are stored together or not at all. */
export interface AppendHistoryRequest {
  type: 'append_history';
  channel_id: string;
  messages: ChatMessage[];
  request_id?: string | undefined;
}

/** `→ {"type":"clear_history","channel_id"}`: deletes the channel's whole history. */
export interface ClearHistoryRequest {
  type: 'clear_history';
  channel_id: string;
  request_id?: string | undefined;
}

/** `→ {"type":"search_hard","query","top_k"?}`. */
export interface SearchHardRequest {
  type: 'search_hard';
  /** Free text; an empty query (or one without indexable words) finds nothing. */
  query: string;
  /** Positive integer. @default 3 */
  top_k?: number | null | undefined;
  request_id?: string | undefined;
}

/** One search hit. `id` and `tag` are ZINO additions (extra fields are allowed by the contract). */
export interface HardMemoryResult {
  messages: ChatMessage[];
  /** TF-IDF cosine similarity in (0, 1], rounded to 4 decimal places. */
  score: number;
  /**
   * The entry's index, as returned by `store_hard`. A ZINO extra: ours always sends it, a mem
   * written from the contract alone (whose results are only `messages` and `score`) does not.
   */
  id?: number;
  /** The tag it was stored with, or `null`. A ZINO extra, like `id`. */
  tag?: string | null;
}

/** `← {"type":"hard_memories","results":[...]}`, best first; equal scores by ascending `id`. */
export interface HardMemoriesReply {
  type: 'hard_memories';
  results: HardMemoryResult[];
  /** Present (with `omitted`) when lower-scored results were left out to fit in one frame. */
  truncated?: true;
  omitted?: number;
}

/** `→ {"type":"store_hard","messages","tag"?}`. */
export interface StoreHardRequest {
  type: 'store_hard';
  messages: ChatMessage[];
  tag?: string | null | undefined;
  request_id?: string | undefined;
}

/** `← {"type":"ok","id"}`: the entry's 0-based index, stable across restarts. */
export interface StoreHardReply {
  type: 'ok';
  id: number;
}

/** ZINO: `→ {"type":"forget_hard","id"}`: deletes the hard memory `id` (as `store_hard` returned it). */
export interface ForgetHardRequest {
  type: 'forget_hard';
  /** The entry's id: a non-negative integer. */
  id: number;
  request_id?: string | undefined;
}

/** `← {"type":"ok","id"}`: the id that was forgotten. An id with no entry is INVALID_REQUEST. */
export interface ForgetHardReply {
  type: 'ok';
  id: number;
}

/** `→ {"type":"get_soft"}`. */
export interface GetSoftRequest {
  type: 'get_soft';
  request_id?: string | undefined;
}

/** `← {"type":"soft_memory","content"}`. */
export interface SoftMemoryReply {
  type: 'soft_memory';
  content: string;
}

/** `→ {"type":"set_soft","content"}`: replaces the soft memory string. */
export interface SetSoftRequest {
  type: 'set_soft';
  content: string;
  request_id?: string | undefined;
}

/** `← {"type":"ok"}` of append_history, clear_history and set_soft. */
export interface OkReply {
  type: 'ok';
}

/** `→ {"type":"status"}` (ZINO extra): how far mem's hard memory index is. */
export interface MemStatusRequest {
  type: 'status';
  request_id?: string | undefined;
}

/**
 * The hard memory index: `building` (started in the background at start-up; searches
 * wait for it, everything else is answered meanwhile), `ready`, or `failed` (searches
 * answer INTERNAL; see mem's log).
 */
export interface HardIndexStatus {
  state: 'building' | 'ready' | 'failed';
  /** Entries in the index so far. */
  entries: number;
  /** Size of `hard_memories.jsonl`. */
  log_bytes: number;
  /** Bytes of it read so far (checked under a snapshot, or indexed); `log_bytes` once ready. */
  indexed_bytes: number;
  /** Bytes of the log covered by the snapshot the build started from; 0 when it started from nothing. */
  snapshot_bytes: number;
  /** Time the build took, once ready. */
  build_ms?: number;
}

/** `← {"type":"status","hard_index":{…}}`. */
export interface MemStatusReply {
  type: 'status';
  hard_index: HardIndexStatus;
}

/**
 * ZINO extra (opt-in; a mem written from the contract alone answers UNKNOWN_TYPE):
 * `→ {"type":"get_context","query"?,"top_k"?,"channel_id"?,"limit"?}` asks for what
 * `search_hard` and `get_history` would answer, in one exchange. The search is asked
 * for when `query` is given and `top_k` is not 0 (absent or null = 3); the history
 * when `channel_id` is given (not null). Each part is validated, and may fail, on its
 * own: a failed part comes back as its error, the other part is still answered.
 */
export interface GetContextRequest {
  type: 'get_context';
  query?: string | null | undefined;
  /** Positive integer, or 0 for no search. @default 3 */
  top_k?: number | null | undefined;
  channel_id?: string | null | undefined;
  /** As `get_history`'s: the N most recent messages; 0 or absent = all. */
  limit?: number | null | undefined;
  request_id?: string | undefined;
}

/** A part of a `context_parts` reply that failed: the error frame its own message would have answered. */
export interface ContextPartError {
  error: ErrorFrame;
}

/**
 * The search part: `search_hard`'s reply without its `type`; or `pending: true` when
 * the index is still being built (mem does not make the history wait for it: ask
 * `search_hard` for this query, which waits for the index); or the search's error.
 */
export type HardPart = Omit<HardMemoriesReply, 'type'> | { pending: true } | ContextPartError;

/** The history part: `get_history`'s reply without its `type`, or its error. */
export type HistoryPart = Omit<HistoryReply, 'type'> | ContextPartError;

/**
 * `← {"type":"context_parts","hard"?,"history"?}`: each part present when it was asked
 * for. Together they fit in one frame: the search results are cut as `search_hard`'s
 * are, then the history to the room left (older messages first, counted in its
 * `omitted`, with `truncated: true`).
 */
export interface ContextPartsReply {
  type: 'context_parts';
  hard?: HardPart;
  history?: HistoryPart;
}

/** zino-mem's messages. */
export const MEM = {
  get_history: message<GetHistoryRequest, HistoryReply>('get_history', { history: true }),
  append_history: message<AppendHistoryRequest, OkReply>('append_history', { ok: true }),
  clear_history: message<ClearHistoryRequest, OkReply>('clear_history', { ok: true }),
  search_hard: message<SearchHardRequest, HardMemoriesReply>('search_hard', { hard_memories: true }),
  store_hard: message<StoreHardRequest, StoreHardReply>('store_hard', { ok: true }),
  forget_hard: message<ForgetHardRequest, ForgetHardReply>('forget_hard', { ok: true }),
  get_soft: message<GetSoftRequest, SoftMemoryReply>('get_soft', { soft_memory: true }),
  set_soft: message<SetSoftRequest, OkReply>('set_soft', { ok: true }),
  status: message<MemStatusRequest, MemStatusReply>('status', { status: true }),
  get_context: message<GetContextRequest, ContextPartsReply>('get_context', { context_parts: true }),
} as const;

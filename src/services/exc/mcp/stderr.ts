/**
 * What a stdio MCP server writes to stderr goes to exc's log, a line at a time, each
 * cut at 2 KiB and at most 50 lines in 10 s per server (a chatty server cannot flood
 * the journal; what was dropped is counted). The last lines are kept to say why a
 * server that died did so.
 */
import type { Stream } from 'node:stream';
import type { Logger } from '../../../runtime/index.js';

const MAX_LINE_CHARS = 2048;
const WINDOW_MS = 10_000;
const LINES_PER_WINDOW = 50;
const TAIL_LINES = 3;

/** The stderr of one server's processes (one after another). */
export class StderrLog {
  private readonly recent: string[] = [];
  private windowStart = 0;
  private inWindow = 0;
  private dropped = 0;

  constructor(
    private readonly server: string,
    private readonly log: Logger,
  ) {}

  /** Reads `stream` (a new process's stderr) until it ends; forgets the last process's lines. */
  follow(stream: Stream | null): void {
    this.recent.length = 0;
    if (!stream) return;
    let partial = '';
    stream.on('data', (chunk: Buffer | string) => {
      partial += chunk.toString();
      let nl: number;
      while ((nl = partial.indexOf('\n')) >= 0) {
        this.line(partial.slice(0, nl));
        partial = partial.slice(nl + 1);
      }
      if (partial.length > MAX_LINE_CHARS) {
        this.line(partial);
        partial = '';
      }
    });
    stream.on('end', () => {
      if (partial !== '') this.line(partial);
    });
  }

  /** The last lines, joined with " | " (empty when there were none). */
  tail(): string {
    return this.recent.join(' | ');
  }

  private line(raw: string): void {
    const line = raw.trimEnd().slice(0, MAX_LINE_CHARS);
    if (line === '') return;
    this.recent.push(line.slice(0, 300));
    if (this.recent.length > TAIL_LINES) this.recent.shift();
    const now = Date.now();
    if (now - this.windowStart >= WINDOW_MS) {
      if (this.dropped > 0) this.log.warn({ server: this.server, dropped: this.dropped }, 'mcp server stderr lines dropped (more than 50 in 10 s)');
      this.windowStart = now;
      this.inWindow = 0;
      this.dropped = 0;
    }
    if (++this.inWindow > LINES_PER_WINDOW) this.dropped++;
    else this.log.info({ server: this.server, line }, 'mcp server stderr');
  }
}

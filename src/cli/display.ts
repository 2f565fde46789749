/**
 * Showing an answer to a person: the model's text on stdout without the
 * `<tool_call>`/`<task>` blocks and their responses, and tool activity on stderr,
 * from the event frames. `--raw` shows the text exactly as produced.
 */
import type { ToolCallEvent, ToolResultEvent } from '../protocol/agr.js';
import type { AgrEvent, ApprovalRequired, ChunkFrame, DoneFrame, ResponseFrame } from '../protocol/daemon.js';
import { ALL_TAGS, StreamParser } from '../protocol/stream-parser.js';

/** What the daemon sends for one answer (an error frame is a thrown error by then). */
export type AnswerFrame = ChunkFrame | AgrEvent | ApprovalRequired | DoneFrame | ResponseFrame;

/** Where the display writes. */
export interface DisplayOutput {
  out: NodeJS.WritableStream;
  err: NodeJS.WritableStream;
}

/** Prints the frames of one answer. */
export class AnswerDisplay {
  private readonly parser = new StreamParser(Number.MAX_SAFE_INTEGER, ALL_TAGS);
  private lastChar = '\n';
  /** Newlines at the end of what was written: hidden blocks must not leave a run of blank lines. */
  private trailingNewlines = 1;

  constructor(
    private readonly io: DisplayOutput,
    private readonly raw: boolean,
  ) {}

  /** Handles one frame from the daemon. */
  frame(frame: AnswerFrame): void {
    switch (frame.type) {
      case 'chunk':
        this.text(str(frame.delta));
        break;
      case 'response':
        this.text(str(frame.content));
        break;
      case 'tool_call':
        this.activity(describeCall(frame));
        break;
      case 'tool_result':
        this.activity(describeResult(frame));
        break;
      // An approval is asked about by the approval prompt (approval-prompt.ts), not shown here.
      case 'approval_required':
      case 'done':
      case 'iteration':
      case 'usage':
        break;
    }
  }

  /** Ends the line being written, so that something else (a question) starts on a line of its own. */
  breakLine(): void {
    if (this.lastChar !== '\n') this.write('\n');
  }

  /** Flushes held text and ends the answer on a new line. */
  finish(): void {
    if (!this.raw) for (const event of this.parser.end()) if (event.kind === 'text') this.write(event.text);
    if (this.lastChar !== '\n') this.write('\n');
  }

  private text(text: string): void {
    if (this.raw) {
      this.write(text);
      return;
    }
    for (const event of this.parser.push(text)) if (event.kind === 'text') this.write(event.text);
  }

  private write(text: string): void {
    let out = text;
    if (!this.raw) {
      const leading = /^\n*/.exec(out)?.[0].length ?? 0;
      const keep = Math.max(0, Math.min(leading, 2 - this.trailingNewlines));
      out = '\n'.repeat(keep) + out.slice(leading).replace(/\n{3,}/g, '\n\n');
      if (out === '') {
        return;
      }
      const trailing = /\n*$/.exec(out)?.[0].length ?? 0;
      this.trailingNewlines = trailing === out.length ? this.trailingNewlines + trailing : trailing;
    }
    if (out === '') return;
    this.io.out.write(out);
    this.lastChar = out[out.length - 1] ?? this.lastChar;
  }

  private activity(line: string): void {
    this.io.err.write(`${line}\n`);
  }
}

function firstLine(text: string, max = 100): string {
  const line = text.split('\n').find((l) => l.trim() !== '') ?? '';
  const more = text.trim().includes('\n') ? ' …' : '';
  return line.length > max ? `${line.slice(0, max)}…` : `${line}${more}`;
}

function describeCall(frame: ToolCallEvent): string {
  const where = (frame.kind === 'tool' || frame.kind === 'task') && frame.host === true ? ' (on the host)' : '';
  if (frame.kind === 'tool') return `[tool] ${str(frame.name)}${where}: ${firstLine(str(frame.code))}`;
  if (frame.kind === 'task') return `[task] ${str(frame.skill)}${where}: ${firstLine(str(frame.request))}`;
  if (frame.kind === 'mcp') return `[tool] ${str(frame.name)}: ${firstLine(JSON.stringify(frame.arguments ?? {}))}`;
  return `[tool] ${firstLine(str(frame.error) || 'invalid block')}`;
}

function describeResult(frame: ToolResultEvent): string {
  const code = frame.exit_code;
  const status = code === 0 ? 'ok' : code === -1 ? 'not run' : `exit ${String(code)}`;
  return `[tool] ${status}: ${firstLine(str(frame.output))}`;
}

/** A field of a frame from the daemon as text: frames are another process's data, whatever their type says. */
function str(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

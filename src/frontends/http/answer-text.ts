/**
 * The answer an OpenAI client sees, from the daemon's frames. ZINO's own text holds
 * the tool loop's markup (`<tool_call>…</tool_call>`, then the
 * `<tool_response>…</tool_response>` agr injects): that is not part of OpenAI's chat
 * format, so it is taken out as it streams (with the newline agr puts on each side
 * of a response block). In verbose mode each tool call and its result are written
 * in its place as Markdown, from agr's event frames.
 */
import type { AgrEvent } from '../../protocol/agr.js';
import { ALL_TAGS, StreamParser, type ParseEvent } from '../../protocol/stream-parser.js';

/** Turns the answer's chunks (and, verbose, events) into the text to send. */
export class AnswerText {
  private readonly parser = new StreamParser(Number.MAX_SAFE_INTEGER, ALL_TAGS);
  /** Newlines at the end of the text so far, not sent yet: a response block may follow and take one. */
  private held = '';
  /** A response block just ended: the newline agr put after it is not the model's. */
  private afterResponse = false;

  /**
   * `plain`: only the answer text; `verbose`: tool activity as Markdown too; `raw`:
   * the text as it came (`zino-direct`, where no tool runs and markup is the model's).
   */
  constructor(private readonly mode: 'plain' | 'verbose' | 'raw') {}

  /** The text to send for the next piece of the answer. */
  chunk(delta: string): string {
    if (this.mode === 'raw') return delta;
    return this.events(this.parser.push(delta));
  }

  /** The Markdown to send for an event (verbose mode), or `''`. */
  event(event: AgrEvent): string {
    if (this.mode !== 'verbose') return '';
    const markdown = eventMarkdown(event);
    if (markdown === '') return '';
    // The Markdown brings its own blank lines.
    this.held = '';
    this.afterResponse = false;
    return markdown;
  }

  /** What is left at the end of the answer. */
  end(): string {
    if (this.mode === 'raw') return '';
    const out = this.events(this.parser.end()) + this.held;
    this.held = '';
    return out;
  }

  private events(events: ParseEvent[]): string {
    let out = '';
    for (const event of events) {
      if (event.kind === 'text') {
        let text = event.text;
        if (this.afterResponse && text.startsWith('\n')) text = text.slice(1);
        this.afterResponse = false;
        if (text === '') continue;
        const body = text.replace(/\n+$/, '');
        if (body === '') {
          this.held += text;
          continue;
        }
        out += this.held + body;
        this.held = text.slice(body.length);
      } else if (event.block.tag === 'tool_response' || event.block.tag === 'task_response') {
        this.held = this.held.slice(1);
        this.afterResponse = true;
      }
    }
    return out;
  }
}

/** A tool call or result as Markdown; iteration and usage events show nothing. */
export function eventMarkdown(event: AgrEvent): string {
  if (event.type === 'tool_call') {
    if (event.kind === 'tool') return `\n\n**Running \`${inline(event.name)}\`:**\n\n${fenced(event.code, language(event.name))}\n\n`;
    if (event.kind === 'task') return `\n\n**Task \`${inline(event.skill)}\`:** ${oneLine(event.request)}\n\n`;
    if (event.kind === 'mcp') return `\n\n**Calling MCP tool \`${inline(event.name)}\`:**\n\n${fenced(JSON.stringify(event.arguments, null, 2), 'json')}\n\n`;
    return `\n\n**Tool call not run:** ${oneLine(event.error)}\n\n`;
  }
  if (event.type === 'tool_result') {
    const code = typeof event.exit_code === 'number' ? event.exit_code : -1;
    const status = code === 0 ? 'exit 0' : code === -1 ? 'not run' : `exit ${code}`;
    return `**Result** (${status}):\n\n${fenced(typeof event.output === 'string' ? event.output : '', 'text')}\n\n`;
  }
  return '';
}

/** A code block whose fence is longer than any run of backticks inside it. */
export function fenced(code: string, lang = ''): string {
  const longest = Math.max(0, ...(code.match(/`+/g) ?? []).map((run) => run.length));
  const fence = '`'.repeat(Math.max(3, longest + 1));
  return `${fence}${lang}\n${code.replace(/\n$/, '')}\n${fence}`;
}

function language(tool: string): string {
  if (/python/i.test(tool)) return 'python';
  if (/bash|shell|sh\b/i.test(tool)) return 'bash';
  return '';
}

/** Text for an inline code span: no backticks to break out of it. */
function inline(text: unknown): string {
  return (typeof text === 'string' ? text : '').replace(/`/g, "'");
}

function oneLine(text: unknown): string {
  return (typeof text === 'string' ? text : '').replace(/\s*\n\s*/g, ' ').trim();
}

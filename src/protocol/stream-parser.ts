/**
 * The streaming interrupt parser: finds `<tool_call>…</tool_call>` and
 * `<task>…</task>` blocks in model output as it arrives, in three states:
 *
 * - FORWARDING: text passes through; a `<` starts HOLDBACK.
 * - HOLDBACK: characters that may still become an opening tag are held; as soon as
 *   they cannot, the first is released as text and the rest is scanned again.
 * - CAPTURING: the block's content accumulates until its closing tag.
 *
 * The result does not depend on how the text is chunked: every split of the same
 * reply yields the same text (concatenated) and the same blocks.
 *
 * Rules:
 * - The first closing tag of the block's kind ends it, even inside a JSON string
 *   (a string that must contain it writes `<\/tool_call>`, a valid JSON escape).
 * - At the end of the stream, held characters and an unclosed block are released as
 *   text; an unclosed block is never executed.
 * - A block larger than `maxBlockBytes` is still delimited (its closing tag is found
 *   with a sliding window) but only its head is kept, and it is marked oversized.
 */

/** The two kinds of interrupt block the model writes. */
export type InterruptTag = 'tool_call' | 'task';
/** Every block kind in ZINO's text: interrupts and the responses injected after them. */
export type BlockTag = InterruptTag | 'tool_response' | 'task_response';

/** The tags agr executes. */
export const INTERRUPT_TAGS: readonly BlockTag[] = ['tool_call', 'task'];
/** Every tag, for a client that hides blocks from a person (zino ask, zino chat). */
export const ALL_TAGS: readonly BlockTag[] = ['tool_call', 'task', 'tool_response', 'task_response'];

/** A complete block. */
export interface Block {
  tag: BlockTag;
  /** Text between the tags (the head only when oversized). */
  content: string;
  /** The block as it appears in the output (`<tag>content</tag>`, shortened when oversized). */
  raw: string;
  /** Size of the full content in UTF-8 bytes. */
  bytes: number;
  oversized: boolean;
}

/** What the parser produces. */
export type ParseEvent = { kind: 'text'; text: string } | { kind: 'block'; block: Block };

const open = (tag: BlockTag): string => `<${tag}>`;
const close = (tag: BlockTag): string => `</${tag}>`;

type State = 'forwarding' | 'holdback' | 'capturing';

/** Incremental parser for one model reply. */
export class StreamParser {
  private state: State = 'forwarding';
  private held = '';
  private tag: BlockTag = 'tool_call';
  private content = '';
  /** UTF-8 bytes of `content` (what is kept). */
  private storedBytes = 0;
  /** UTF-8 bytes of the whole block content seen so far. */
  private bytes = 0;
  /** Set once a piece did not fit: the kept head is final, whatever the chunking. */
  private headFull = false;
  /** The last characters seen while capturing, to find a closing tag split across pushes. */
  private tail = '';
  private out: ParseEvent[] = [];
  /** A high surrogate that ended the previous push: its pair comes with the next one. */
  private pendingSurrogate = '';

  private readonly openTags: readonly string[];

  /** Finds blocks of `tags` (the interrupts by default). */
  constructor(
    private readonly maxBlockBytes: number,
    private readonly tags: readonly BlockTag[] = INTERRUPT_TAGS,
  ) {
    this.openTags = tags.map(open);
  }

  /** Feeds the next piece of output; returns the events it completes. */
  push(text: string): ParseEvent[] {
    let input = this.pendingSurrogate + text;
    this.pendingSurrogate = '';
    const lastCode = input.charCodeAt(input.length - 1);
    if (lastCode >= 0xd800 && lastCode <= 0xdbff) {
      this.pendingSurrogate = input.slice(-1);
      input = input.slice(0, -1);
    }
    this.feed(input);
    return this.drain();
  }

  /** Ends the stream: releases held text and any unclosed block as text. */
  end(): ParseEvent[] {
    // A high surrogate whose pair never came is still text.
    this.feed(this.pendingSurrogate);
    this.pendingSurrogate = '';
    if (this.state === 'holdback') this.text(this.held);
    if (this.state === 'capturing') {
      const omitted = this.bytes - this.storedBytes;
      this.text(open(this.tag) + this.content + (omitted > 0 ? omittedNote(omitted) : ''));
    }
    this.state = 'forwarding';
    this.held = '';
    this.content = '';
    this.storedBytes = 0;
    return this.drain();
  }

  /** Runs the state machine over `input`. */
  private feed(text: string): void {
    let input = text;
    while (input.length > 0) {
      if (this.state === 'forwarding') input = this.forward(input);
      else if (this.state === 'holdback') input = this.hold(input);
      else input = this.capture(input);
    }
  }

  private forward(input: string): string {
    const lt = input.indexOf('<');
    if (lt < 0) {
      this.text(input);
      return '';
    }
    if (lt > 0) this.text(input.slice(0, lt));
    this.state = 'holdback';
    this.held = '';
    return input.slice(lt);
  }

  private hold(input: string): string {
    for (let i = 0; i < input.length; i++) {
      this.held += input[i];
      const tag = this.tags.find((t) => open(t) === this.held);
      if (tag) {
        this.state = 'capturing';
        this.tag = tag;
        this.content = '';
        this.storedBytes = 0;
        this.bytes = 0;
        this.headFull = false;
        this.tail = '';
        return input.slice(i + 1);
      }
      if (!this.openTags.some((t) => t.startsWith(this.held))) {
        // Not a tag after all: its first character is text; everything after it is scanned again.
        const rest = this.held.slice(1) + input.slice(i + 1);
        this.text(this.held[0] as string);
        this.held = '';
        this.state = 'forwarding';
        return rest;
      }
    }
    return '';
  }

  private capture(input: string): string {
    const closing = close(this.tag);
    const window = this.tail + input;
    const at = window.indexOf(closing);
    if (at < 0) {
      this.append(input);
      this.tail = window.slice(-(closing.length - 1));
      return '';
    }
    // The closing tag may have begun in earlier pushes: those characters were content so far.
    const fromInput = at - this.tail.length;
    if (fromInput >= 0) this.append(input.slice(0, fromInput));
    else this.unappend(-fromInput);
    this.emitBlock();
    return input.slice(fromInput + closing.length);
  }

  private append(piece: string): void {
    if (piece === '') return;
    const size = Buffer.byteLength(piece);
    const room = this.maxBlockBytes - this.storedBytes;
    if (!this.headFull && size <= room) {
      this.content += piece;
      this.storedBytes += size;
    } else if (!this.headFull) {
      const head = headOfBytes(piece, room);
      this.content += head;
      this.storedBytes += Buffer.byteLength(head);
      this.headFull = true;
    }
    this.bytes += size;
  }

  /** Takes back the last `count` characters, which turned out to start the closing tag. */
  private unappend(count: number): void {
    const removed = this.tail.slice(this.tail.length - count);
    const storedAll = this.storedBytes === this.bytes;
    this.bytes -= Buffer.byteLength(removed);
    if (storedAll) {
      this.content = this.content.slice(0, this.content.length - count);
      this.storedBytes = this.bytes;
    } else if (this.storedBytes > this.bytes) {
      this.content = headOfBytes(this.content, this.bytes);
      this.storedBytes = Buffer.byteLength(this.content);
    }
  }

  private emitBlock(): void {
    const oversized = this.bytes > this.maxBlockBytes;
    const kept = oversized ? this.content + omittedNote(this.bytes - this.storedBytes) : this.content;
    this.out.push({
      kind: 'block',
      block: { tag: this.tag, content: this.content, raw: open(this.tag) + kept + close(this.tag), bytes: this.bytes, oversized },
    });
    this.state = 'forwarding';
    this.content = '';
    this.storedBytes = 0;
    this.tail = '';
  }

  private text(text: string): void {
    if (text === '') return;
    const last = this.out[this.out.length - 1];
    if (last?.kind === 'text') last.text += text;
    else this.out.push({ kind: 'text', text });
  }

  private drain(): ParseEvent[] {
    const events = this.out;
    this.out = [];
    return events;
  }
}

function omittedNote(bytes: number): string {
  return `\n[... ${bytes} bytes omitted]\n`;
}

/** The longest prefix of `text` that fits in `maxBytes` of UTF-8 without splitting a character. */
function headOfBytes(text: string, maxBytes: number): string {
  let bytes = 0;
  let end = 0;
  for (const char of text) {
    const size = Buffer.byteLength(char);
    if (bytes + size > maxBytes) break;
    bytes += size;
    end += char.length;
  }
  return text.slice(0, end);
}

/** Parses a whole reply at once (what collected mode and tests use). */
export function parseAll(text: string, maxBlockBytes: number, tags: readonly BlockTag[] = INTERRUPT_TAGS): ParseEvent[] {
  const parser = new StreamParser(maxBlockBytes, tags);
  const events = [...parser.push(text), ...parser.end()];
  // Merge text events that the two calls left adjacent.
  const merged: ParseEvent[] = [];
  for (const event of events) {
    const last = merged[merged.length - 1];
    if (event.kind === 'text' && last?.kind === 'text') last.text += event.text;
    else merged.push(event.kind === 'text' ? { kind: 'text', text: event.text } : event);
  }
  return merged;
}

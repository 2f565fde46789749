/**
 * Bounded capture of a stream: keeps at most `limit` bytes, counts the rest, and
 * decodes UTF-8 without splitting a character at the cut.
 */

/** Collects up to `limit` bytes. */
export class BoundedCapture {
  private readonly parts: Buffer[] = [];
  private kept = 0;
  /** Bytes received in total (kept or not). */
  total = 0;

  constructor(private readonly limit: number) {}

  /** Adds `chunk`; returns false once the limit has been exceeded. */
  push(chunk: Buffer): boolean {
    this.total += chunk.length;
    const room = this.limit - this.kept;
    if (room > 0) {
      const part = chunk.length <= room ? chunk : chunk.subarray(0, room);
      this.parts.push(part);
      this.kept += part.length;
    }
    return this.total <= this.limit;
  }

  /** True when more than `limit` bytes arrived. */
  get overflowed(): boolean {
    return this.total > this.limit;
  }

  /** The kept bytes as text; a multi-byte character cut by the limit is dropped. */
  text(): string {
    const bytes = Buffer.concat(this.parts, this.kept);
    return (this.overflowed ? bytes.subarray(0, utf8Boundary(bytes)) : bytes).toString('utf8');
  }
}

/** Length of the longest prefix of `bytes` that does not end inside a UTF-8 sequence. */
export function utf8Boundary(bytes: Buffer): number {
  let end = bytes.length;
  // Walk back over at most 3 continuation bytes to the lead byte of the last character.
  let i = end - 1;
  while (i >= 0 && end - i <= 4 && ((bytes[i] ?? 0) & 0xc0) === 0x80) i--;
  if (i < 0) return end;
  const lead = bytes[i] ?? 0;
  const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  if (end - i < need) end = i;
  return end;
}

/**
 * The `request_id` a service makes up for a request that came without one (docs/protocol.md,
 * "Extras"): a version-4 UUID, as `crypto.randomUUID()` would give, drawn from `Math.random()`.
 *
 * A request id is there to follow one request through the logs; nothing trusts it, guesses it
 * or keys a secret on it (approval ids and tokens come from `node:crypto`: src/services/exc/
 * approvals.ts, src/frontends/http/token.ts). V8 seeds `Math.random()` in each process from the
 * operating system's entropy, so ids stay distinct across the seven services and across
 * restarts. Loading `node:crypto` for it cost every service about 6 ms of CPU at start
 * (docs/benchmarks.md, round 13), on the cold start's path: daemon, agr, ctx and sys need it for
 * nothing else (mem and exc hash with it, and rtr's openai SDK takes `globalThis.crypto`).
 */

/** `00` … `ff`, so an id is sixteen table look-ups and no number formatting. */
const HEX: readonly string[] = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));

/** 32 random bits as an unsigned integer. */
function random32(): number {
  return (Math.random() * 0x1_0000_0000) >>> 0;
}

/** The four bytes of `word` as eight hex digits, most significant first. */
function hex32(word: number): string {
  return (HEX[word >>> 24] as string) + HEX[(word >>> 16) & 0xff] + HEX[(word >>> 8) & 0xff] + HEX[word & 0xff];
}

/** A fresh version-4 UUID (`xxxxxxxx-xxxx-4xxx-Yxxx-xxxxxxxxxxxx`, Y one of 8, 9, a, b). */
export function madeUpRequestId(): string {
  const a = hex32(random32());
  // Version 4 in the high nibble of the third group, the RFC 4122 variant (10xx) in the fourth's.
  const b = hex32(((random32() & 0xffff0fff) | 0x00004000) >>> 0);
  const c = hex32(((random32() & 0x3fffffff) | 0x80000000) >>> 0);
  const d = hex32(random32());
  return `${a}-${b.slice(0, 4)}-${b.slice(4)}-${c.slice(0, 4)}-${c.slice(4)}${d}`;
}

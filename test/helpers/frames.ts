/** Collecting the frames of a stream over our own client (raw sockets: raw.ts). */
import { stream, type Frame } from '../../src/runtime/index.js';

/** Sends `req` to `socketPath` and returns every frame of the reply, the terminal one last. */
export async function collectFrames(socketPath: string, req: Frame, options: Parameters<typeof stream>[2] = {}): Promise<Frame[]> {
  const out: Frame[] = [];
  for await (const f of stream(socketPath, req, options)) out.push(f);
  return out;
}

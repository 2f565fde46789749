/** Collecting the frames of a stream over our own client (raw sockets: raw.ts). */
import { RemoteError, request, stream, type Frame } from '../../src/runtime/index.js';

/** Sends `req` to `socketPath` and returns every frame of the reply, the terminal one last. */
export async function collectFrames(socketPath: string, req: Frame, options: Parameters<typeof stream>[2] = {}): Promise<Frame[]> {
  const out: Frame[] = [];
  for await (const f of stream(socketPath, req, options)) out.push(f);
  return out;
}

/** Sends one request; an error frame from the service resolves as that frame, anything else that fails throws. */
export async function requestOrError(socketPath: string, req: Frame, options: Parameters<typeof request>[2] = {}): Promise<Frame> {
  try {
    return await request(socketPath, req, options);
  } catch (err) {
    if (err instanceof RemoteError) return err.frame;
    throw err;
  }
}

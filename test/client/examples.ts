/**
 * The examples of docs/client.md, compiled by the type-check and run by
 * test/client/client.test.ts against a real suite. docs/client.md shows each
 * region between `// example: NAME` and `// end` verbatim (a test checks it).
 */
import { RemoteError, ZinoClient, ZinoError } from 'zino';

// example: ask
export async function askOnce(dir: string): Promise<string> {
  const zino = new ZinoClient({ dir });
  const answer = await zino.ask('how much disk space is free?', { channelId: 'ops' });
  return answer.content;
}
// end

// example: stream
export async function askStreaming(dir: string, write: (text: string) => void): Promise<string> {
  const zino = new ZinoClient({ dir });
  let tools = 0;
  for await (const frame of zino.askStream('what is the uptime?', { events: true })) {
    if (frame.type === 'chunk') write(frame.delta);
    else if (frame.type === 'tool_call') tools++;
    else if (frame.type === 'done') return `${frame.full_text.length} characters, ${tools} tool call(s)`;
  }
  throw new Error('the stream ended without done');
}
// end

// example: cancel
export async function askWithDeadline(dir: string, ms: number): Promise<string> {
  const zino = new ZinoClient({ dir });
  try {
    const answer = await zino.ask('summarise the system log', { signal: AbortSignal.timeout(ms) });
    return answer.content;
  } catch (err) {
    // Closing the connection cancelled the LLM request and any running program too.
    if (err instanceof ZinoError && err.code === 'CANCELLED') return 'gave up';
    throw err;
  }
}
// end

// example: memory
export async function rememberAndSearch(dir: string): Promise<string[]> {
  const zino = new ZinoClient({ dir });
  await zino.mem.storeHard([{ role: 'user', content: 'the backup server is nas-2' }], { tag: 'infra' });
  const hits = await zino.mem.searchHard('which server holds the backups?', { topK: 3 });
  return hits.map((hit) => `${hit.score.toFixed(2)} ${hit.messages.map((m) => m.content).join(' / ')}`);
}
// end

// example: approve
export async function askApprovingOnly(dir: string, allowed: string): Promise<string> {
  const zino = new ZinoClient({ dir });
  const answer = await zino.ask('restart the web server', {
    // Called for each host run the model asks for; the answer goes to the daemon on a new connection.
    onApproval: (request) => (request.code.trim() === allowed ? { decision: 'allow' } : { decision: 'deny', note: `only "${allowed}" may run` }),
  });
  return answer.content;
}
// end

// example: errors
export async function describeFailure(dir: string): Promise<string> {
  const zino = new ZinoClient({ dir });
  try {
    await zino.mem.getHistory('');
    return 'no error';
  } catch (err) {
    if (err instanceof RemoteError) return `mem refused: ${err.code}`; // INVALID_REQUEST
    if (err instanceof ZinoError && err.code === 'UPSTREAM_UNAVAILABLE') return `mem is down (${err.detail.errno ?? 'no errno'})`;
    throw err;
  }
}
// end

/**
 * Comparing what a sandboxed program sees with what the host sees: the same command
 * run here, outside any sandbox, and the small parsers the sandbox tests share.
 */
import { spawnSync } from 'node:child_process';
import net from 'node:net';

/** The same command on the host, outside any sandbox; throws when it fails. */
export function onHost(command: string): string {
  const result = spawnSync('sh', ['-c', command], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`${command}: ${result.stderr}`);
  return result.stdout;
}

/** The non-empty lines of `text`, trimmed and sorted: two views compared regardless of order. */
export const lines = (text: string): string[] =>
  text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .sort();

/** `name=value` lines (`connect=denied`, `write=ok`) as a record. */
export function fields(stdout: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of stdout.split('\n')) {
    const eq = line.indexOf('=');
    if (eq > 0) out[line.slice(0, eq)] = line.slice(eq + 1);
  }
  return out;
}

/** A TCP listener on loopback that counts the connections it accepts (and closes them). */
export interface CountingListener {
  port: number;
  accepted(): number;
  close(): Promise<void>;
}

/** Starts a {@link CountingListener} on 127.0.0.1 and an ephemeral port. */
export async function countingListener(): Promise<CountingListener> {
  let accepted = 0;
  const server = net.createServer((s) => {
    accepted++;
    s.destroy();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as net.AddressInfo).port,
    accepted: () => accepted,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

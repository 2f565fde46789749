/**
 * `zino mock-llm --port N --script FILE`: the mock OpenAI-compatible server as a
 * command, for trying ZINO or benchmarking without an LLM.
 */
import { readFileSync } from 'node:fs';
import { castToError } from '../../runtime/errors.js';
import { parseScript, type MockScript } from '../../testing/mock-llm/script.js';
import { startMockLlm } from '../../testing/mock-llm/server.js';
import { EXIT } from '../../runtime/exit.js';

/** Runs the mock until SIGINT/SIGTERM. */
export async function mockLlmCommand(options: { port: string; script?: string }): Promise<void> {
  const port = Number(options.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    process.stderr.write(`zino mock-llm: --port must be a port number, got "${options.port}"\n`);
    process.exit(EXIT.USAGE);
  }
  let script: MockScript = {};
  if (options.script !== undefined) {
    try {
      script = parseScript(JSON.parse(readFileSync(options.script, 'utf8')));
    } catch (err) {
      process.stderr.write(`zino mock-llm: cannot use ${options.script}: ${(err as Error).message}\n`);
      process.exit(EXIT.USAGE);
    }
  }
  const mock = await startMockLlm(script, { port }).catch((err: NodeJS.ErrnoException) => {
    process.stderr.write(`zino mock-llm: cannot listen on 127.0.0.1:${port}: ${err.code ?? err.message}\n`);
    process.exit(EXIT.FAILURE);
  });
  process.stdout.write(`mock LLM listening: base_url = "${mock.baseUrl}"\n`);
  const stop = (): void => {
    mock.close().then(
      () => process.exit(EXIT.OK),
      (err: unknown) => {
        process.stderr.write(`zino mock-llm: ${castToError(err).message}\n`);
        process.exit(EXIT.FAILURE);
      },
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

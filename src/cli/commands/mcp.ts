/**
 * `zino mcp [--http HOST:PORT]`: ZINO as an MCP server (src/frontends/mcp/), a client
 * of the running suite. The SDK is imported only here, when the command runs.
 */
import { ZinoError, createLogger } from '../../runtime/index.js';
import { EXIT } from '../../runtime/exit.js';
import { cliConfig, fail, type ConfigOptions } from '../config.js';

/** Runs `zino mcp` until its host goes away. */
export async function mcpCommand(options: ConfigOptions & { http?: string }): Promise<void> {
  const config = cliConfig(options);
  const log = createLogger('mcp', { configLevel: config.logging.level });
  const { runMcpFrontend } = await import('../../frontends/mcp/main.js');
  try {
    await runMcpFrontend(config, log, { http: options.http });
  } catch (err) {
    fail((err as Error).message, err instanceof ZinoError && err.code === 'INVALID_REQUEST' ? EXIT.USAGE : EXIT.FAILURE);
  }
}

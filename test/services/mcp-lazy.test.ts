/**
 * The MCP SDK is loaded only where MCP is used: an exc without [mcp.servers] (and
 * `zino ask`) never imports it; an exc with one does. Imports are recorded by a
 * module hook (test/helpers/imports.ts).
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI_PATH } from '../../src/testing/paths.js';
import { writeTestConfig, type ConfigOverrides } from '../../src/testing/suite.js';
import { IMPORT_HOOK, importedSources, importsOfService } from '../helpers/imports.js';
import { filesystem, serverState } from '../helpers/mcp.js';
import { tempDir } from '../helpers/util.js';

/** Runs `zino serve exc` (no sandbox) with the hook until `ready` holds; returns the sources it imported. */
function importsOfExc(overrides: ConfigOverrides, ready: (socket: string) => Promise<boolean>): Promise<string[]> {
  return importsOfService('exc', { ...overrides, exc: { sandbox: 'none', ...overrides.exc } }, ready);
}

describe('the MCP SDK', () => {
  it('is not imported by an exc without MCP servers, nor by the CLI', async () => {
    const imports = await importsOfExc({}, () => Promise.resolve(true));
    expect(imports.some((url) => url === 'src/services/exc/main.ts')).toBe(true);
    expect(imports.filter((url) => url.includes('@modelcontextprotocol') || url.includes('node_modules/ajv/'))).toEqual([]);
    // The CLI registers `zino mcp` but imports its command (and the front end) only when it runs.
    const { dir, cleanup } = tempDir('zlazyc');
    try {
      const { file } = writeTestConfig(dir);
      const log = path.join(dir, 'imports.log');
      const cli = spawnSync(process.execPath, ['--import', IMPORT_HOOK, CLI_PATH, 'ask', '--config', file, 'hello'], {
        env: { ...process.env, ZINO_IMPORT_LOG: log },
        encoding: 'utf8',
      });
      expect(cli.status).toBe(69);
      const cliImports = importedSources(log);
      expect(cliImports.some((url) => url === 'src/cli/commands/ask.ts')).toBe(true);
      expect(cliImports.filter((url) => url.includes('@modelcontextprotocol') || url.includes('/frontends/') || url.includes('/commands/mcp.ts'))).toEqual([]);
    } finally {
      cleanup();
    }
  });

  it('is imported by an exc with an MCP server', async () => {
    const { dir, cleanup } = tempDir('zlazys');
    try {
      const imports = await importsOfExc(
        { mcp: { servers: { files: filesystem(dir) } } },
        async (socket) => (await serverState(socket, 'files'))?.state === 'up',
      );
      expect(imports.some((url) => url === 'node_modules/@modelcontextprotocol/sdk/dist/esm/client/index.js')).toBe(true);
    } finally {
      cleanup();
    }
  });
});

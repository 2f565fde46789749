/**
 * The MCP SDK is loaded only where MCP is used: an exc without [mcp.servers] (and
 * `zino ask`) never imports it; an exc with one does. Imports are recorded by a
 * module hook (test/fixtures/import-log.mjs); the CLI runs bundled (dist/bundle/), so each file it
 * imported stands for the sources the bundle's metafile lists in it.
 */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CLI_PATH, PACKAGE_ROOT } from '../../src/testing/paths.js';
import { waitForPing } from '../../src/testing/process.js';
import { writeTestConfig, type ConfigOverrides } from '../../src/testing/suite.js';
import { filesystem, serverState } from '../helpers/mcp.js';
import { tempDir, waitFor } from '../helpers/util.js';

const HOOK = path.join(PACKAGE_ROOT, 'test', 'fixtures', 'import-log.mjs');

/** The sources (`src/…ts`, `node_modules/…`) in the imported files, from the bundle's metafile. */
function sourcesOf(urls: string[]): string[] {
  const meta = JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'dist', 'bundle', 'meta.json'), 'utf8')) as {
    outputs: Record<string, { inputs: Record<string, unknown> }>;
  };
  return urls.flatMap((url) => {
    if (!url.startsWith('file://')) return [url];
    const output = meta.outputs[path.relative(PACKAGE_ROOT, fileURLToPath(url))];
    return output ? Object.keys(output.inputs) : [url];
  });
}

/** Runs `zino serve exc` with the hook until `ready` holds; returns the modules it imported. */
async function importsOfExc(overrides: ConfigOverrides, ready: (socket: string) => Promise<boolean>): Promise<string[]> {
  const { dir, cleanup } = tempDir('zlazy');
  try {
    const { file, config } = writeTestConfig(dir, { exc: { sandbox: 'none' }, ...overrides });
    const log = path.join(dir, 'imports.log');
    const child = spawn(process.execPath, ['--import', HOOK, CLI_PATH, 'serve', 'exc', '--config', file], {
      env: { ...process.env, ZINO_IMPORT_LOG: log },
      stdio: 'ignore',
    });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      await waitForPing(config.exc.socket);
      await waitFor(() => ready(config.exc.socket), 'exc to be ready');
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
    return sourcesOf(readFileSync(log, 'utf8').split('\n'));
  } finally {
    cleanup();
  }
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
      const cli = spawnSync(process.execPath, ['--import', HOOK, CLI_PATH, 'ask', '--config', file, 'hello'], {
        env: { ...process.env, ZINO_IMPORT_LOG: log },
        encoding: 'utf8',
      });
      expect(cli.status).toBe(69);
      const cliImports = sourcesOf(readFileSync(log, 'utf8').split('\n'));
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

/**
 * The second half of `npm run build` (after tsc): bundles the `zino` CLI with esbuild into
 * dist/bundle/ — the entry `zino.js` and one chunk per lazily loaded part (each command, each
 * service, the openai SDK, the MCP SDK …), every dependency inside — and beside it one file per
 * service (`serve/NAME/serve.js`), which `zino serve NAME` loads instead of the command line's
 * chunks. What `zino up`, the systemd units, the `zino` wrapper and the tests run is this bundle:
 * a service then loads three or four files instead of about fifty ES modules and the CommonJS
 * modules of its dependencies, which was most of its start-up (docs/benchmarks.md, issue 18; why
 * esbuild and why a file per service: docs/decisions.md).
 *
 * Source maps sit beside each file (no sources inside, only the mappings); the logger maps a
 * logged stack back to src/ with them when it logs one (src/runtime/stack.ts). `meta.json` is
 * esbuild's metafile: which sources each output holds (tests read it to tell what a process loaded).
 */
import { build } from 'esbuild';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { renamedClasses, sourceClassNames } from './renamed-classes.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const outdir = path.join(root, 'dist', 'bundle');

/**
 * pino's transports (`pino.transport()`: a worker thread that logs for the process) are not
 * used: every process logs through `pino.destination({ sync: true })` (src/runtime/log.ts). Yet
 * pino loads them at start, and with them `node:worker_threads`, in every process: about 2 ms
 * of CPU each for each of the seven services, which start at once (docs/benchmarks.md,
 * round 13). So within pino and thread-stream, `thread-stream` is a class that refuses to be
 * made, and `worker_threads` answers the one thing pino asks of it outside its transports,
 * `isMainThread` (read only for a logger that is not `sync`): no process of ours runs pino in
 * a worker. test/cli/start-imports.test.ts checks that no service loads worker_threads.
 */
const pinoWithoutTransports = {
  name: 'pino-without-transports',
  setup(build) {
    build.onResolve({ filter: /^(node:)?(thread-stream|worker_threads)$/ }, (args) =>
      /[\\/]node_modules[\\/](pino|thread-stream)[\\/]/.test(args.importer) ? { path: args.path.replace(/^node:/, ''), namespace: 'pino-shim' } : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: 'pino-shim' }, (args) => ({
      loader: 'js',
      contents:
        args.path === 'thread-stream'
          ? "module.exports = class ThreadStream { constructor() { throw new Error('pino transports are not part of the zino bundle (scripts/bundle.mjs): log through pino.destination'); } };"
          : 'module.exports = { isMainThread: true };',
    }));
  },
};

/** What every build below shares. */
const common = {
  absWorkingDir: root,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  chunkNames: 'chunks/[name]-[hash]',
  sourcemap: 'linked',
  sourcesContent: false,
  // Nothing is minified: names stay as written, except where two collide in a chunk (see the
  // check below). No `keepNames`: its `__name` call on every closure cost 4–7 % of a request's CPU.
  keepNames: false,
  metafile: true,
  logLevel: 'warning',
  plugins: [pinoWithoutTransports],
  // Bundled CommonJS dependencies (pino, ajv, natural …) call require() for Node's built-in modules.
  banner: { js: "import { createRequire as __zinoCreateRequire } from 'node:module';\nconst require = __zinoCreateRequire(import.meta.url);" },
};

/** The seven services, as the configuration's schema names them (tsc has built it before this runs). */
const { SERVICE_NAMES } = await import(pathToFileURL(path.join(root, 'dist', 'src', 'runtime', 'config', 'schema.js')).href);

rmSync(outdir, { recursive: true, force: true });
const results = [
  await build({
    ...common,
    entryPoints: { zino: 'src/cli/main.ts' },
    outdir,
    // main.ts hands `zino serve NAME` for these to their own files (below). A string: esbuild would
    // put an array in a chunk of its own, one more file for every start to load.
    define: { ZINO_SERVICE_FILES: JSON.stringify(SERVICE_NAMES.join(' ')) },
  }),
];
/**
 * One file per service, `serve/NAME/serve.js`: that service's definition and serve-run.ts with
 * everything they import, and nothing of the other services or the command line. Only what the
 * service imports lazily (rtr's openai SDK, exc's MCP SDK) is in chunks of its own, and the code
 * those share with the rest in one more. A service then starts from three files of the bundle
 * (zino.js, esbuild's helpers and this one; four for rtr and exc) instead of seven to fifteen of the command line's
 * chunks, which are shared by many entries (docs/benchmarks.md, round 13).
 */
for (const name of SERVICE_NAMES) {
  results.push(
    await build({
      ...common,
      stdin: {
        contents: [
          `import definition from './src/services/${name}/main.ts';`,
          "import { serveDefinition } from './src/cli/serve-run.ts';",
          `export const serve = (options) => serveDefinition(${JSON.stringify(name)}, () => definition, options);`,
        ].join('\n'),
        resolveDir: root,
        sourcefile: `src/cli/serve-${name}.entry.ts`,
        loader: 'ts',
      },
      outdir: path.join(outdir, 'serve', name),
      entryNames: 'serve',
    }),
  );
}
if (results.some((result) => result.errors.length > 0 || result.warnings.length > 0)) {
  process.stderr.write('bundle: esbuild reported problems (see above)\n');
  process.exit(1);
}
/** The metafiles of every build as one: which sources each output holds. */
const metafile = {
  inputs: Object.assign({}, ...results.map((result) => result.metafile.inputs)),
  outputs: Object.assign({}, ...results.map((result) => result.metafile.outputs)),
};

// A module that runs itself when it is the process's entry (`import.meta.url === argv[1]`) would
// run inside the CLI if it landed in zino.js: none of those may be part of the bundle.
for (const file of Object.keys(metafile.outputs).filter((f) => f.endsWith('.js'))) {
  if (readFileSync(path.join(root, file), 'utf8').includes('pathToFileURL(process.argv[1])')) {
    process.stderr.write(`bundle: ${file} holds a module that runs itself as an entry point\n`);
    process.exit(1);
  }
}

// A class of ours renamed by esbuild (a name collision in a chunk) would log under another name.
const jsOutputs = Object.keys(metafile.outputs).filter((f) => f.endsWith('.js'));
const renamed = renamedClasses(
  sourceClassNames(path.join(root, 'src')),
  jsOutputs.map((file) => readFileSync(path.join(root, file), 'utf8')),
);
if (renamed.length > 0) {
  process.stderr.write(`bundle: esbuild renamed classes of ours (a name collision in a chunk; rename one): ${renamed.join(', ')}\n`);
  process.exit(1);
}

writeFileSync(path.join(outdir, 'meta.json'), JSON.stringify(metafile));

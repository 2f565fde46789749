#!/usr/bin/env node
/**
 * The `zino` command's entry. The plain `zino serve NAME` that every service runs starts
 * the service directly, and the plain `zino up` the suite; every other command line goes
 * to the parser in program.ts.
 *
 * Bundled, each of the seven services has a file of its own beside this one
 * (`serve/NAME/serve.js`, scripts/bundle.mjs), which holds that service and what it needs:
 * a start loads three files (four for rtr and exc) instead of the seven to fifteen of the
 * command line's bundle (about 5 ms of CPU each, seven at once: docs/benchmarks.md, round 13).
 * Run from tsc's output, `ZINO_SERVICE_FILES` is not defined and every name goes through
 * serve.ts.
 */
import type { ServeOptions } from './serve-run.js';
import { plainServeArgv, plainUpArgv } from './serve-argv.js';

/** The services with a file of their own in the bundle, separated by spaces: set by scripts/bundle.mjs (esbuild's `define`). */
declare const ZINO_SERVICE_FILES: string | undefined;

const serve = plainServeArgv(process.argv.slice(2));
const up = serve ? undefined : plainUpArgv(process.argv.slice(2));
const own =
  serve && typeof ZINO_SERVICE_FILES !== 'undefined' && ZINO_SERVICE_FILES.split(' ').includes(serve.service) ? await serviceFile(serve.service) : undefined;
if (serve && own) await own.serve(serve.options);
else if (serve) await (await import('./commands/serve.js')).serveCommand(serve.service, serve.options);
else if (up) await (await import('./commands/up.js')).upCommand(up);
else await (await import('./program.js')).runProgram(process.argv);

/** The service's own file of the bundle; undefined when it is missing (a partial copy of dist/bundle): serve.ts serves it then. */
async function serviceFile(name: string): Promise<{ serve: (options: ServeOptions) => Promise<void> } | undefined> {
  try {
    return (await import(new URL(`./serve/${name}/serve.js`, import.meta.url).href)) as { serve: (options: ServeOptions) => Promise<void> };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND' && String((err as Error).message).includes(`/serve/${name}/serve.js`)) return undefined;
    throw err;
  }
}

#!/usr/bin/env node
/**
 * The `zino` command's entry. The plain `zino serve NAME` that every service runs starts
 * the service directly; every other command line goes to the parser in program.ts.
 */
import { plainServeArgv } from './serve-argv.js';

const serve = plainServeArgv(process.argv.slice(2));
if (serve) await (await import('./commands/serve.js')).serveCommand(serve.service, serve.options);
else await (await import('./program.js')).runProgram(process.argv);

/**
 * Runs the seven services (and, when asked, the HTTP front end) as child processes (`zino serve <name>`): starts them
 * together, waits until each answers ping, restarts one that crashes with
 * exponential backoff, and on stop leaves no process and no socket behind.
 *
 * A child that exits 0 was asked to stop (SIGTERM/SIGINT) and is not restarted,
 * as under systemd's Restart=on-failure; nor is one that exits 78 (bad config) or
 * 73 (another server owns its socket).
 * Each child's stdin is a pipe from us: if we die, even by SIGKILL, it sees EOF
 * and shuts down, so no orphan outlives the supervisor.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { SERVICE_NAMES, ping, removeStaleSocket, type ServiceName } from '../../runtime/index.js';
import { EXIT } from '../../runtime/exit.js';
import { serviceNodeFlags } from '../../runtime/node-flags.js';
import { CLI_ENTRY, packageRoot } from '../../runtime/package-root.js';

/** The bundled CLI the children run (`serve <name>`), whichever build of the CLI runs the supervisor. */
const CLI = path.join(packageRoot(), CLI_ENTRY);
/** Backoff before restart number n: 250 ms × 2^n, at most 5 s. */
const BASE_RESTART_MS = 250;
const MAX_RESTART_MS = 5000;
/** A child that ran this long before crashing starts its backoff over. */
const HEALTHY_MS = 10_000;

/** A child: one of the seven services, or the HTTP front end (`zino serve http`). */
export type ChildName = ServiceName | 'http';

/** How the supervisor runs its children. */
export interface SupervisorOptions {
  /** Arguments after `serve <name>`: `--config FILE`, `--dir DIR`. */
  args: string[];
  sockets: Record<ServiceName, string>;
  env: NodeJS.ProcessEnv;
  /** Time a child gets to stop on SIGTERM before SIGKILL, in ms. */
  graceMs: number;
  /**
   * Also run the HTTP front end: `listen` names its address in messages, `listening`
   * says whether it has started to listen (it has no socket to ping).
   */
  http?: { listen: string; listening(): boolean } | undefined;
  /**
   * A line a child wrote to stderr (its JSON log), for the children `relay` names.
   * The others write to our stderr directly (inherited): no line crosses this
   * process, which would otherwise wake for every log line of every request.
   */
  onLog(service: ChildName, line: string): void;
  /** Whether `service`'s log goes through {@link onLog} (a pipe) rather than straight to our stderr. */
  relay(service: ChildName): boolean;
  /** Something the supervisor wants to say. */
  onNotice(message: string): void;
}

interface Child {
  name: ChildName;
  proc?: ChildProcess | undefined;
  exited?: Promise<void> | undefined;
  startedAt: number;
  restarts: number;
  timer?: NodeJS.Timeout | undefined;
  /** Why it is not running and will not be restarted. */
  failed?: string | undefined;
}

/** See the module comment. */
export class Supervisor {
  private readonly children = new Map<ChildName, Child>();
  private stopping = false;

  constructor(private readonly options: SupervisorOptions) {}

  /** The children: the seven services, and the HTTP front end when asked for. */
  private get names(): readonly ChildName[] {
    return this.options.http ? [...SERVICE_NAMES, 'http'] : SERVICE_NAMES;
  }

  /** Spawns every service. */
  start(): void {
    for (const name of this.names) {
      const child: Child = { name, startedAt: 0, restarts: 0 };
      this.children.set(name, child);
      this.spawn(child);
    }
  }

  /** The pid of a running service (tests use it to crash one). */
  pid(name: ChildName): number | undefined {
    return this.children.get(name)?.proc?.pid;
  }

  /** Resolves when every service answers ping; rejects when one cannot start. */
  async ready(timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    await Promise.all(
      this.names.map(async (name) => {
        for (;;) {
          const failed = this.children.get(name)?.failed;
          if (failed) throw new Error(`${name} cannot start: ${failed}`);
          if (await this.answers(name)) return;
          if (Date.now() > deadline) throw new Error(`${name} did not ${name === 'http' ? 'listen' : 'answer ping'} within ${timeoutMs} ms`);
          await new Promise((r) => setTimeout(r, 20));
        }
      }),
    );
  }

  private async answers(name: ChildName): Promise<boolean> {
    if (name === 'http') return this.options.http?.listening() === true;
    const socket = this.options.sockets[name];
    // Pinged once its file exists: until the service binds, each ping would be a connect that fails, an error and its
    // message, every 20 ms for each of the seven, on the cores they are starting on (docs/benchmarks.md, round 14).
    if (!existsSync(socket)) return false;
    try {
      await ping(socket, { timeoutMs: 1000 });
      return true;
    } catch {
      return false;
    }
  }

  /** Forwards a signal (SIGHUP: reload) to every running service. */
  signal(signal: NodeJS.Signals): void {
    for (const child of this.children.values()) child.proc?.kill(signal);
  }

  /** Stops everything: SIGTERM, SIGKILL after the grace period, then removes leftover sockets. */
  async stop(): Promise<void> {
    this.stopping = true;
    const running = [...this.children.values()];
    for (const child of running) clearTimeout(child.timer);
    await Promise.all(
      running.map(async (child) => {
        if (!child.proc || !child.exited) return;
        child.proc.kill('SIGTERM');
        const killer = setTimeout(() => child.proc?.kill('SIGKILL'), this.options.graceMs);
        await child.exited;
        clearTimeout(killer);
      }),
    );
    // A child killed by SIGKILL could not remove its socket; remove it only if nobody listens on it.
    await Promise.all(SERVICE_NAMES.map((name) => removeStaleSocket(this.options.sockets[name])));
  }

  private spawn(child: Child): void {
    const relay = this.options.relay(child.name);
    const proc = spawn(process.execPath, [...serviceNodeFlags(child.name), CLI, 'serve', child.name, ...this.options.args], {
      stdio: ['pipe', 'ignore', relay ? 'pipe' : 'inherit'],
      env: { ...this.options.env, ZINO_SUPERVISED: '1' },
    });
    child.proc = proc;
    child.startedAt = Date.now();
    let buffer = '';
    proc.stderr?.setEncoding('utf8').on('data', (text: string) => {
      buffer += text;
      let nl: number;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        if (line.trim() !== '') this.options.onLog(child.name, line);
      }
    });
    proc.stdin?.on('error', () => undefined);
    child.exited = new Promise((resolve) => {
      proc.once('exit', (code, signal) => {
        child.proc = undefined;
        resolve();
        this.onExit(child, code, signal);
      });
    });
  }

  private onExit(child: Child, code: number | null, signal: NodeJS.Signals | null): void {
    if (this.stopping) return;
    if (code === EXIT.OK) {
      child.failed = 'it was stopped';
      this.options.onNotice(`${child.name} stopped (exit 0); not restarting it`);
      return;
    }
    if (code === EXIT.CONFIG) {
      child.failed = 'invalid configuration (see its log)';
      this.options.onNotice(`${child.name} exited with a configuration error; not restarting it`);
      return;
    }
    if (code === EXIT.IN_USE) {
      const where = child.name === 'http' ? (this.options.http?.listen ?? '') : this.options.sockets[child.name];
      child.failed = `another server already listens on ${where}`;
      this.options.onNotice(`${child.name} cannot start: ${child.failed}; not restarting it`);
      return;
    }
    if (Date.now() - child.startedAt >= HEALTHY_MS) child.restarts = 0;
    const delay = Math.min(MAX_RESTART_MS, BASE_RESTART_MS * 2 ** child.restarts);
    child.restarts++;
    const how = signal ? `killed by ${signal}` : `exit ${String(code)}`;
    this.options.onNotice(`${child.name} crashed (${how}); restarting in ${(delay / 1000).toFixed(2)} s`);
    child.timer = setTimeout(() => {
      if (!this.stopping) this.spawn(child);
    }, delay);
  }
}

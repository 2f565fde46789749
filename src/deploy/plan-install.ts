/**
 * Deciding what `zino install-systemd` does, from what is on the target
 * ({@link Observed}) and the files to install. Pure: no file is read or written.
 *
 * Rules: the user and group are created only when missing; the package and the
 * units are (re)installed every time, which is how an upgrade works; the
 * configuration and the env file are written only when absent; the data
 * directory is never touched; a prefix that holds something other than ZINO is
 * refused.
 */
import type { Action, Owner } from './actions.js';
import { HTTP_UNIT, PATHS, RUNNER_GROUP, RUNNER_UNIT, SERVICE_UNITS, TARGET_UNIT, ZINO_GROUP, ZINO_USER, unitPath, type Layout } from './layout.js';
import { configEnablesHttp, type Observed } from './observe.js';
import type { RenderedFile } from './render.js';
import { CLI_ENTRY } from '../runtime/package-root.js';

/** Everything the installation writes, rendered. */
export interface InstallFiles {
  units: RenderedFile[];
  /** `zino-http.service`, installed only when the configuration enables the HTTP front end. */
  httpUnit: RenderedFile;
  tmpfiles: string;
  sysusers: string;
  wrapper: string;
  config: string;
  env: string;
}

/** What to install, and how. */
export interface InstallRequest {
  layout: Layout;
  /** Root of the built package being installed. */
  source: string;
  /** Package entries to copy (see `selectPackageFiles`). */
  entries: string[];
  /** Problems with the package (not built, dependencies missing). */
  missing: string[];
  /** The node binary the units run. */
  node: string;
  version: string;
  files: InstallFiles;
  /** Start (or restart) the services at the end. */
  now: boolean;
}

/** The planned steps, or why nothing may be done. */
export interface Plan {
  actions: Action[];
  /** Reasons to refuse: when not empty, nothing is done. */
  errors: string[];
}

const ROOT_ZINO: Owner = { user: 'root', group: ZINO_GROUP };
const ROOT_ROOT: Owner = { user: 'root', group: 'root' };

/** Directories the units hide (ProtectHome=yes): a node binary there cannot start. */
const HIDDEN_HOMES = ['/home/', '/root/', '/run/user/'];

/** Plans an installation. */
export function planInstall(request: InstallRequest, seen: Observed): Plan {
  const { layout, files } = request;
  const errors: string[] = [];
  const actions: Action[] = [];
  const systemctl = (why: string, manager: 'required' | 'optional' | 'none', ...args: string[]): Action => ({
    kind: 'run',
    argv: ['systemctl', ...args],
    why,
    manager,
  });

  for (const problem of request.missing) errors.push(`the package at ${request.source} is incomplete: ${problem}`);
  if (seen.prefix === 'foreign' && !seen.sourceIsPrefix) {
    errors.push(`${layout.prefix} exists and is not a ZINO installation; remove it or choose another --prefix`);
  }
  if (HIDDEN_HOMES.some((dir) => request.node.startsWith(dir))) {
    const problem = `node (${request.node}) is under a home directory, which the units hide (ProtectHome=yes); install Node.js system-wide (e.g. /usr/bin/node) or pass --node`;
    if (layout.live) errors.push(problem);
    else actions.push({ kind: 'note', text: `warning: ${problem}` });
  }
  if (errors.length > 0) return { actions: [], errors };

  // The user and group, declared for systemd-sysusers (which creates only what is missing).
  actions.push({
    kind: 'write',
    path: PATHS.sysusersFile,
    content: files.sysusers,
    mode: 0o644,
    owner: ROOT_ROOT,
    why: 'the zino user and group, and the zino-runner group, for systemd-sysusers',
  });
  if (seen.userExists && seen.groupExists && seen.runnerGroupExists) {
    actions.push({ kind: 'keep', path: `user and group ${ZINO_USER}, group ${RUNNER_GROUP}`, why: 'they exist' });
  } else {
    actions.push({
      kind: 'run',
      argv: ['systemd-sysusers', PATHS.sysusersFile],
      why: `create the ${ZINO_USER} system user and group and the ${RUNNER_GROUP} group`,
      manager: 'none',
    });
  }

  if (seen.sourceIsPrefix) {
    actions.push({ kind: 'keep', path: layout.prefix, why: 'zino runs from this installation: its files are already in place' });
  } else {
    const manifest = JSON.stringify({ name: 'zino', version: request.version, source: request.source, node: request.node }, null, 2) + '\n';
    actions.push({ kind: 'install-package', source: request.source, prefix: layout.prefix, entries: request.entries, manifest });
  }

  if (seen.configDirExists) actions.push({ kind: 'keep', path: PATHS.configDir, why: 'exists' });
  else actions.push({ kind: 'mkdir', path: PATHS.configDir, mode: 0o750, owner: ROOT_ZINO });
  if (seen.configExists) {
    actions.push({ kind: 'keep', path: PATHS.configFile, why: 'an existing configuration is never changed' });
  } else {
    actions.push({ kind: 'write', path: PATHS.configFile, content: files.config, mode: 0o640, owner: ROOT_ZINO, why: 'initial configuration (demo model)' });
  }
  if (seen.envExists) {
    actions.push({ kind: 'keep', path: PATHS.envFile, why: 'an existing env file is never changed' });
    if (seen.envMode !== undefined && (seen.envMode & 0o007) !== 0) {
      actions.push({
        kind: 'note',
        text: `warning: ${PATHS.envFile} is readable by every user (mode 0${seen.envMode.toString(8)}); it holds the API key: chmod 0640 ${PATHS.envFile}`,
      });
    }
  } else {
    actions.push({ kind: 'write', path: PATHS.envFile, content: files.env, mode: 0o640, owner: ROOT_ZINO, why: 'where the LLM API key goes (rtr only)' });
  }

  for (const unit of files.units) {
    actions.push({
      kind: 'write',
      path: unitPath(unit.name),
      content: unit.text,
      mode: 0o644,
      owner: ROOT_ROOT,
      why: seen.unitsPresent.includes(unit.name) ? 'unit (updated)' : 'unit',
    });
  }
  // The HTTP front end, as the configuration in force says: the existing one, else the one written now.
  const httpEnabled = httpEnabledBy(files, seen);
  const httpPresent = seen.unitsPresent.includes(HTTP_UNIT);
  if (httpEnabled) {
    actions.push({
      kind: 'write',
      path: unitPath(HTTP_UNIT),
      content: files.httpUnit.text,
      mode: 0o644,
      owner: ROOT_ROOT,
      why: `unit${httpPresent ? ' (updated)' : ''}: [http] enabled = true`,
    });
  } else if (httpPresent) {
    actions.push(systemctl('the HTTP endpoint is no longer enabled', 'optional', 'stop', HTTP_UNIT));
    actions.push(systemctl('no start at boot', 'none', 'disable', HTTP_UNIT));
    actions.push({ kind: 'remove', path: unitPath(HTTP_UNIT), why: `[http] enabled is not true in ${PATHS.configFile}` });
  } else {
    actions.push({
      kind: 'note',
      text: `${HTTP_UNIT} (the OpenAI-compatible endpoint) not installed: [http] enabled is not true in ${PATHS.configFile}; set it and run zino install-systemd again to add it`,
    });
  }
  actions.push({
    kind: 'write',
    path: PATHS.tmpfilesFile,
    content: files.tmpfiles,
    mode: 0o644,
    owner: ROOT_ROOT,
    why: `${PATHS.runtimeDir} at boot, 0750 zino:zino`,
  });
  if (seen.wrapper === 'foreign') {
    actions.push({
      kind: 'keep',
      path: PATHS.wrapper,
      why: `not written by zino install-systemd; the command is ${request.node} ${layout.prefix}/${CLI_ENTRY}`,
    });
  } else {
    actions.push({ kind: 'write', path: PATHS.wrapper, content: files.wrapper, mode: 0o755, owner: ROOT_ROOT, why: 'the zino command for every user' });
  }
  actions.push({
    kind: 'keep',
    path: PATHS.stateDir,
    why: seen.stateDirExists ? "mem's data is never touched by install" : 'created by systemd when zino-mem first starts (StateDirectory=zino)',
  });

  actions.push({ kind: 'run', argv: ['systemd-tmpfiles', '--create', PATHS.tmpfilesFile], why: `create ${PATHS.runtimeDir}`, manager: 'none' });
  actions.push(systemctl('load the new units', 'required', 'daemon-reload'));
  actions.push(systemctl('start the services at boot', 'none', 'enable', TARGET_UNIT));
  if (httpEnabled) {
    actions.push(systemctl('start the HTTP endpoint with zino.target', 'none', 'enable', HTTP_UNIT));
    actions.push({
      kind: 'keep',
      path: PATHS.httpStateDir,
      why: seen.httpStateDirExists ? 'the HTTP token is never touched by install' : `created by systemd when ${HTTP_UNIT} first starts, with the token`,
    });
  }
  if (seen.prefix === 'zino' || seen.unitsPresent.length > 0) {
    const running = [...SERVICE_UNITS, RUNNER_UNIT, ...(httpEnabled && httpPresent ? [HTTP_UNIT] : [])];
    actions.push(systemctl('running services pick up the new code and units', 'optional', 'try-restart', ...running));
  }
  if (request.now) actions.push(systemctl('start the services now', 'required', 'start', TARGET_UNIT));
  return { actions, errors };
}

/** Whether the installation runs the HTTP front end: the existing configuration says, else the one being written. */
export function httpEnabledBy(files: InstallFiles, seen: Observed): boolean {
  return seen.configExists ? seen.httpEnabled : configEnablesHttp(files.config);
}

/** What to tell the operator after a successful installation. */
export function nextSteps(layout: Layout, now: boolean, httpEnabled = false): string[] {
  return [
    `Configure the LLM: [api] base_url and [service] model in ${PATHS.configFile}; the key as LLM_API_KEY=... in ${PATHS.envFile}.`,
    `${now ? 'Apply a change with' : 'Then start with'}: systemctl ${now ? 'restart' : 'start'} ${TARGET_UNIT}   (status: systemctl status 'zino-*'; logs: journalctl -u 'zino-*')`,
    `Let a user talk to ZINO: usermod -aG ${ZINO_GROUP} NAME (then log in again), and: zino ask "hello"`,
    httpEnabled
      ? `The OpenAI-compatible endpoint ([http] listen, by default http://127.0.0.1:8088/v1) takes the token in ${PATHS.httpTokenFile} (readable by group ${ZINO_GROUP}); see ${layout.prefix}/docs/http.md`
      : `An OpenAI-compatible endpoint for chat front ends and editors: set [http] enabled = true in ${PATHS.configFile}, run zino install-systemd again; see ${layout.prefix}/docs/http.md`,
    `Documentation: ${layout.prefix}/docs/operations.md`,
  ];
}

/**
 * Deciding what `zino uninstall-systemd` does. Pure, like `planInstall`.
 *
 * Stops and disables the services, removes the units, the tmpfiles.d and
 * sysusers.d entries, the `zino` command (when it is ours) and the prefix (when
 * it holds ZINO). The configuration (/etc/zino), the data (/var/lib/zino, and the
 * HTTP token in /var/lib/zino-http) and the zino user are kept unless `purge`.
 */
import type { Action } from './actions.js';
import {
  HTTP_UNIT,
  KNOWN_UNITS,
  PATHS,
  RUNNER_GROUP,
  RUNNER_UNIT,
  SERVICE_UNITS,
  TARGET_UNIT,
  ZINO_GROUP,
  ZINO_USER,
  unitPath,
  type Layout,
} from './layout.js';
import type { Observed } from './observe.js';
import type { Plan } from './plan-install.js';

/** What to remove. */
export interface UninstallRequest {
  layout: Layout;
  /** Also remove the configuration, the data, and the user and group. */
  purge: boolean;
}

/** Plans a removal. */
export function planUninstall(request: UninstallRequest, seen: Observed): Plan {
  const { layout, purge } = request;
  const actions: Action[] = [];
  if (seen.unitsPresent.length > 0) {
    const units = [TARGET_UNIT, ...SERVICE_UNITS, RUNNER_UNIT, ...(seen.unitsPresent.includes(HTTP_UNIT) ? [HTTP_UNIT] : [])];
    actions.push({ kind: 'run', argv: ['systemctl', 'stop', ...units], why: 'stop the services', manager: 'optional' });
    actions.push({ kind: 'run', argv: ['systemctl', 'disable', ...units], why: 'no start at boot', manager: 'none' });
  }
  for (const unit of KNOWN_UNITS) {
    if (seen.unitsPresent.includes(unit)) actions.push({ kind: 'remove', path: unitPath(unit), why: 'unit' });
  }
  if (seen.tmpfilesExists) actions.push({ kind: 'remove', path: PATHS.tmpfilesFile, why: 'tmpfiles.d entry' });
  if (seen.sysusersExists) actions.push({ kind: 'remove', path: PATHS.sysusersFile, why: 'sysusers.d entry' });
  if (seen.unitsPresent.length > 0) {
    actions.push({ kind: 'run', argv: ['systemctl', 'daemon-reload'], why: 'forget the removed units', manager: 'optional' });
  }
  if (seen.runtimeDirExists) actions.push({ kind: 'remove', path: PATHS.runtimeDir, why: 'sockets of the stopped services' });

  if (seen.wrapper === 'ours') actions.push({ kind: 'remove', path: PATHS.wrapper, why: 'the zino command' });
  else if (seen.wrapper === 'foreign') actions.push({ kind: 'keep', path: PATHS.wrapper, why: 'not written by zino install-systemd' });

  if (purge) {
    if (seen.configDirExists) actions.push({ kind: 'remove', path: PATHS.configDir, why: 'configuration and API key (--purge)' });
    if (seen.stateDirExists) actions.push({ kind: 'remove', path: PATHS.stateDir, why: "mem's data (--purge)" });
    if (seen.httpStateDirExists) actions.push({ kind: 'remove', path: PATHS.httpStateDir, why: 'the HTTP token (--purge)' });
    if (seen.userExists) actions.push({ kind: 'run', argv: ['userdel', ZINO_USER], why: 'the service user (--purge)', manager: 'none' });
    // userdel removes a group of the same name that has no other member; otherwise remove it here.
    if (seen.groupExists)
      actions.push({
        kind: 'run',
        argv: ['sh', '-c', `! getent group ${ZINO_GROUP} >/dev/null || groupdel ${ZINO_GROUP}`],
        why: 'the group (--purge)',
        manager: 'none',
      });
    if (seen.runnerGroupExists) actions.push({ kind: 'run', argv: ['groupdel', RUNNER_GROUP], why: "the runner's group (--purge)", manager: 'none' });
  } else {
    if (seen.configDirExists) actions.push({ kind: 'keep', path: PATHS.configDir, why: 'configuration kept (--purge removes it)' });
    if (seen.stateDirExists) actions.push({ kind: 'keep', path: PATHS.stateDir, why: "mem's data kept (--purge removes it)" });
    if (seen.httpStateDirExists) actions.push({ kind: 'keep', path: PATHS.httpStateDir, why: 'the HTTP token kept (--purge removes it)' });
    if (seen.userExists) actions.push({ kind: 'keep', path: `user and group ${ZINO_USER}`, why: 'they own the kept files (--purge removes them)' });
  }
  // Last: when this command runs from the prefix, everything it needs is loaded by now.
  if (seen.prefix === 'zino') actions.push({ kind: 'remove', path: layout.prefix, why: 'the installed package' });
  else if (seen.prefix === 'foreign') actions.push({ kind: 'keep', path: layout.prefix, why: 'not a ZINO installation: left alone' });
  else if (seen.prefix === 'empty') actions.push({ kind: 'remove', path: layout.prefix, why: 'empty' });
  return { actions, errors: [] };
}

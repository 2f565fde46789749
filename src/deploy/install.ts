/**
 * `zino install-systemd` and `zino uninstall-systemd`: check, observe, plan,
 * apply, and say what was done, what could not be, and what to do next. Each
 * returns the exit status.
 */
import { readFileSync } from 'node:fs';
import { release } from 'node:os';
import path from 'node:path';
import { parse } from 'smol-toml';
import { EXIT, packageRoot, resolveConfig } from '../runtime/index.js';
import { applyPlan, type ApplyResult } from './apply.js';
import { envFileText, installConfigText } from './config-text.js';
import { DEFAULT_PREFIX, PATHS, makeLayout, unitPath, type Layout } from './layout.js';
import { observe } from './observe.js';
import { readPackageVersion, selectPackageFiles } from './package-files.js';
import { httpEnabledBy, nextSteps, planInstall, type InstallFiles, type Plan } from './plan-install.js';
import { planUninstall } from './plan-uninstall.js';
import { RenderError, renderFile, renderHttpUnit, renderUnits, renderWrapper, type RenderVars } from './render.js';

/** Options shared by both commands. */
export interface DeployOptions {
  /** Install prefix. @default the installed one, else /opt/zino */
  prefix?: string | undefined;
  /** Root to install into. @default / */
  root?: string | undefined;
  /** Print every action, change nothing. */
  dryRun?: boolean | undefined;
  /** Where to report. @default stdout */
  print?: ((line: string) => void) | undefined;
}

/** Options of `zino install-systemd`. */
export interface InstallOptions extends DeployOptions {
  /** Start (or restart) the services at the end. */
  now?: boolean | undefined;
  /** Node binary the units run. @default the one running this command */
  node?: string | undefined;
  /** The built package to install. @default the one running this command */
  from?: string | undefined;
  /** The kernel's release, for the Landlock note. @default os.release() */
  kernelRelease?: string | undefined;
}

/** Options of `zino uninstall-systemd`. */
export interface UninstallOptions extends DeployOptions {
  /** Also remove /etc/zino, /var/lib/zino and the zino user and group. */
  purge?: boolean | undefined;
}

/** Installs (or upgrades) the systemd deployment. */
export function installSystemd(options: InstallOptions): number {
  const print = options.print ?? ((line: string) => process.stdout.write(`${line}\n`));
  const source = path.resolve(options.from ?? packageRoot());
  const node = options.node ?? process.execPath;
  let layout: Layout;
  let files: InstallFiles;
  try {
    layout = makeLayout({ root: options.root, prefix: options.prefix ?? installedPrefix(options.root) });
  } catch (err) {
    print(`zino install-systemd: ${(err as Error).message}`);
    return EXIT.USAGE;
  }
  try {
    files = renderInstallFiles(source, { node, prefix: layout.prefix });
  } catch (err) {
    print(`zino install-systemd: ${(err as Error).message}`);
    return err instanceof RenderError ? EXIT.USAGE : EXIT.FAILURE;
  }
  const version = readPackageVersion(source);
  const seen = observe(layout, source);
  const { entries, missing } = selectPackageFiles(source);
  const plan = planInstall({ layout, source, entries, missing, node, version, files, now: options.now === true }, seen);

  print(`zino install-systemd: ZINO ${version} from ${source} into ${layout.prefix}${layout.live ? '' : ` (root ${layout.root})`}, node ${node}`);
  const refused = preflight('install-systemd', layout, plan, seen.isRoot, options.dryRun === true, print);
  if (refused !== undefined) return refused;
  const oldKernel = landlockKernelNote(options.kernelRelease ?? release());
  if (layout.live && oldKernel !== undefined) print(`  ! ${oldKernel}`);
  if (layout.live && !seen.systemdRunning && options.dryRun !== true) {
    print('  ! systemd is not running on this machine: the files are installed and the units enabled, but nothing can be started here');
  }
  const result = applyPlan(plan.actions, { layout, dryRun: options.dryRun === true, systemdRunning: seen.systemdRunning, print });
  const status = summarise(result, options.dryRun === true, layout, print);
  if (status === EXIT.OK && options.dryRun !== true) {
    print('Next steps:');
    for (const line of nextSteps(layout, options.now === true, httpEnabledBy(files, seen))) print(`  ${line}`);
  }
  if (status !== EXIT.OK && layout.live && !seen.systemdRunning) {
    print('Advice: boot this machine with systemd (or install in a system that runs it), then: systemctl daemon-reload && systemctl start zino.target');
  }
  return status;
}

/** Removes the systemd deployment (keeping configuration and data unless `purge`). */
export function uninstallSystemd(options: UninstallOptions): number {
  const print = options.print ?? ((line: string) => process.stdout.write(`${line}\n`));
  let layout: Layout;
  try {
    layout = makeLayout({ root: options.root, prefix: options.prefix ?? installedPrefix(options.root) });
  } catch (err) {
    print(`zino uninstall-systemd: ${(err as Error).message}`);
    return EXIT.USAGE;
  }
  const seen = observe(layout, packageRootOrUndefined());
  const plan = planUninstall({ layout, purge: options.purge === true }, seen);
  print(`zino uninstall-systemd: ZINO in ${layout.prefix}${layout.live ? '' : ` (root ${layout.root})`}${options.purge ? ', with --purge' : ''}`);
  const refused = preflight('uninstall-systemd', layout, plan, seen.isRoot, options.dryRun === true, print);
  if (refused !== undefined) return refused;
  if (plan.actions.length === 0) {
    print('  = nothing to remove: ZINO is not installed here');
    return EXIT.OK;
  }
  const result = applyPlan(plan.actions, { layout, dryRun: options.dryRun === true, systemdRunning: seen.systemdRunning, print });
  return summarise(result, options.dryRun === true, layout, print);
}

/** Renders every file the installation writes, and checks the configuration it would write. */
export function renderInstallFiles(source: string, vars: RenderVars): InstallFiles {
  const config = installConfigText(readFileSync(path.join(source, 'ZINO.toml'), 'utf8'), vars.prefix);
  // The package's own ZINO.toml is the template: make sure what comes out is a valid configuration.
  resolveConfig(parse(config), { file: PATHS.configFile, baseDir: PATHS.configDir, env: {} });
  return {
    units: renderUnits(source, vars),
    httpUnit: renderHttpUnit(source, vars),
    tmpfiles: renderFile(source, 'zino.tmpfiles', vars).text,
    sysusers: renderFile(source, 'zino.sysusers', vars).text,
    wrapper: renderWrapper(source, vars),
    config,
    env: envFileText(),
  };
}

/** The prefix of the installation in `root`, read from its daemon unit (its CLI now or before the bundle), or `undefined`. */
export function installedPrefix(root: string | undefined): string | undefined {
  const layout = makeLayout({ root, prefix: DEFAULT_PREFIX });
  try {
    const unit = readFileSync(layout.at(unitPath('zino-daemon.service')), 'utf8');
    return /^ExecStart=\S+ (\/\S+)\/dist\/(?:bundle\/zino|src\/cli\/main)\.js /m.exec(unit)?.[1];
  } catch {
    return undefined;
  }
}

/** Refusals before anything is done: plan errors, or not root on the live system. */
function preflight(command: string, layout: Layout, plan: Plan, isRoot: boolean, dryRun: boolean, print: (line: string) => void): number | undefined {
  for (const error of plan.errors) print(`  ✗ ${error}`);
  if (plan.errors.length > 0) {
    print(`Nothing was changed.`);
    return EXIT.FAILURE;
  }
  if (layout.live && !isRoot) {
    if (dryRun) {
      print(`  ! not running as root: a real run would refuse (use sudo)`);
      return undefined;
    }
    print(`  ✗ zino ${command} changes the system (users, /etc, units): it must run as root.`);
    print(`Nothing was changed. Run it with sudo, see what it would do with --dry-run, or prepare a tree with --root DIR.`);
    return EXIT.FAILURE;
  }
  if (dryRun) print('Dry run: nothing is changed.');
  return undefined;
}

function summarise(result: ApplyResult, dryRun: boolean, layout: Layout, print: (line: string) => void): number {
  if (dryRun) {
    print(`Dry run: ${result.done} actions would be carried out; nothing was changed.`);
    return EXIT.OK;
  }
  if (!layout.live) print(`Installed into ${layout.root}: commands marked "on the target system" were not run.`);
  if (result.failed.length === 0) {
    print(`Done (${result.done} actions).`);
    return EXIT.OK;
  }
  print(`Could not do ${result.failed.length} of the actions:`);
  for (const line of result.failed) print(`  - ${line}`);
  return EXIT.FAILURE;
}

function packageRootOrUndefined(): string | undefined {
  try {
    return packageRoot();
  } catch {
    return undefined;
  }
}

/** The first Linux release with Landlock ABI 6, which exc's landlock view needs (signal and abstract-socket scopes). */
export const LANDLOCK_KERNEL: readonly [number, number] = [6, 12];

/**
 * What to tell an operator installing on a kernel older than {@link LANDLOCK_KERNEL}:
 * zino-exc.service allows no namespaces, so exc has no sandbox there unless the
 * bubblewrap drop-in is installed. Undefined on a newer kernel (or an unreadable release).
 */
export function landlockKernelNote(kernelRelease: string): string | undefined {
  const match = /^(\d+)\.(\d+)/.exec(kernelRelease);
  if (!match) return undefined;
  const [major, minor] = [Number(match[1]), Number(match[2])];
  const [needMajor, needMinor] = LANDLOCK_KERNEL;
  if (major > needMajor || (major === needMajor && minor >= needMinor)) return undefined;
  return (
    `this kernel (${kernelRelease}) is older than Linux ${needMajor}.${needMinor}: exc's sandbox (the landlock view) cannot be used, so every run would be a host run under [approval]; ` +
    `for bubblewrap's private view instead, install systemd/zino-exc-bubblewrap.conf as /etc/systemd/system/zino-exc.service.d/bubblewrap.conf (docs/operations.md, "Older kernels")`
  );
}

/**
 * `zino install-systemd` and `zino uninstall-systemd`: the host installation
 * under systemd (see docs/operations.md). The work is in src/deploy/, loaded
 * only when one of them runs.
 */
import type { Command } from 'commander';
import type { InstallOptions, UninstallOptions } from '../../deploy/install.js';
import { DEFAULT_PREFIX } from '../../deploy/layout.js';

/** Adds the two commands to `program`. */
export function registerSystemdCommands(program: Command): void {
  program
    .command('install-systemd')
    .description('install (or upgrade) ZINO as systemd services: user, package, /etc/zino, units (as root)')
    .option('--prefix <dir>', `where the package goes (default: the installed one, else ${DEFAULT_PREFIX})`)
    .option('--root <dir>', 'install into this root instead of / (packaging, tests): commands are printed, not run')
    .option('--dry-run', 'print every action, change nothing')
    .option('--now', 'start (or restart) the services at the end')
    .option('--node <path>', 'node binary the units run (default: the one running this command)')
    .option('--from <dir>', 'the built package to install (default: the one running this command)')
    .action(async (options: InstallOptions) => process.exit((await import('../../deploy/install.js')).installSystemd(options)));

  program
    .command('uninstall-systemd')
    .description('stop and remove the systemd services and the package; keeps /etc/zino and /var/lib/zino unless --purge')
    .option('--prefix <dir>', `where the package is (default: the installed one, else ${DEFAULT_PREFIX})`)
    .option('--root <dir>', 'remove from this root instead of / (commands are printed, not run)')
    .option('--dry-run', 'print every action, change nothing')
    .option('--purge', 'also remove the configuration, the data and the zino user and group')
    .action(async (options: UninstallOptions) => process.exit((await import('../../deploy/install.js')).uninstallSystemd(options)));
}

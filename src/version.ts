/** ZINO's version, read once from the package's package.json. */
import { packageRoot, readPackageManifest } from './runtime/package-root.js';

function readVersion(): string {
  try {
    const version = readPackageManifest(packageRoot())?.version;
    return typeof version === 'string' ? version : '0.0.0';
  } catch {
    return '0.0.0';
  }
}

/** The package version, e.g. "0.1.0". */
export const VERSION = readVersion();

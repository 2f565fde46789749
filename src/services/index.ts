/**
 * Where each service's definition lives: `src/services/<name>/main.ts`, whose
 * default export is a `ServiceDefinition`. Loaded lazily so that `zino ask` never
 * pulls in the openai SDK or natural, and `zino serve mem` loads only mem.
 */
import { SERVICE_NAMES, type ServiceDefinition, type ServiceName } from '../runtime/index.js';

/** True when `name` is one of the seven services. */
export function isServiceName(name: string): name is ServiceName {
  return (SERVICE_NAMES as readonly string[]).includes(name);
}

/**
 * Each service's module, imported when asked for. Spelled out (not a computed path) so that the
 * bundler (scripts/bundle.mjs) sees every one: each becomes its own chunk of the bundled CLI.
 */
const DEFINITIONS: Record<ServiceName, () => Promise<{ default: ServiceDefinition }>> = {
  daemon: () => import('./daemon/main.js'),
  rtr: () => import('./rtr/main.js'),
  agr: () => import('./agr/main.js'),
  sys: () => import('./sys/main.js'),
  exc: () => import('./exc/main.js'),
  mem: () => import('./mem/main.js'),
  ctx: () => import('./ctx/main.js'),
};

/** Imports the definition of `name`. */
export async function loadServiceDefinition(name: ServiceName): Promise<ServiceDefinition> {
  return (await DEFINITIONS[name]()).default;
}

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

/** Imports the definition of `name`. */
export async function loadServiceDefinition(name: ServiceName): Promise<ServiceDefinition> {
  const module = (await import(`./${name}/main.js`)) as { default: ServiceDefinition };
  return module.default;
}

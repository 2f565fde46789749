/**
 * Where each service's definition lives. Loaded lazily so that `zino ask` never
 * pulls in the openai SDK or natural, and `zino serve mem` loads only mem.
 */
import type { ServiceDefinition, ServiceName } from '../runtime/index.js';

/** Loader of each service's definition module. */
export const SERVICES: Partial<Record<ServiceName, () => Promise<ServiceDefinition>>> = {};

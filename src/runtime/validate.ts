/**
 * Readers for request fields: each returns the typed value or throws
 * INVALID_REQUEST naming the field. `null` counts as absent for optional fields
 * (clients in other languages often send `"channel_id": null`).
 */
import { InvalidRequestError } from './errors.js';

/**
 * The value of `key` in a request. Typed requests (`Unvalidated<Req>`) allow only their
 * declared keys, so a handler cannot read a field its message does not have.
 */
function fieldOf(frame: object, key: string): unknown {
  return (frame as Readonly<Record<string, unknown>>)[key];
}

/** Bounds of a numeric field. */
export interface NumberBounds {
  min?: number;
  max?: number;
}

/** A required string field; `allowEmpty` false rejects "" and whitespace-only strings. */
export function requireString<T extends object>(frame: T, key: keyof T & string, options: { allowEmpty?: boolean } = {}): string {
  const value = fieldOf(frame, key);
  if (value === undefined || value === null) throw new InvalidRequestError(`missing required field "${key}"`);
  if (typeof value !== 'string') throw new InvalidRequestError(`field "${key}" must be a string, got ${kindOf(value)}`);
  if (options.allowEmpty === false && value.trim() === '') throw new InvalidRequestError(`field "${key}" must not be empty`);
  return value;
}

/** An optional string field. */
export function optionalString<T extends object>(frame: T, key: keyof T & string): string | undefined {
  const value = fieldOf(frame, key);
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new InvalidRequestError(`field "${key}" must be a string, got ${kindOf(value)}`);
  return value;
}

/** An optional boolean field. */
export function optionalBoolean<T extends object>(frame: T, key: keyof T & string): boolean | undefined {
  const value = fieldOf(frame, key);
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'boolean') throw new InvalidRequestError(`field "${key}" must be true or false, got ${kindOf(value)}`);
  return value;
}

/** A required finite number within bounds. */
export function requireNumber<T extends object>(frame: T, key: keyof T & string, bounds: NumberBounds = {}): number {
  const value = fieldOf(frame, key);
  if (value === undefined || value === null) throw new InvalidRequestError(`missing required field "${key}"`);
  return checkNumber(value, key, bounds, false);
}

/** An optional finite number within bounds. */
export function optionalNumber<T extends object>(frame: T, key: keyof T & string, bounds: NumberBounds = {}): number | undefined {
  const value = fieldOf(frame, key);
  if (value === undefined || value === null) return undefined;
  return checkNumber(value, key, bounds, false);
}

/** An optional integer within bounds. */
export function optionalInteger<T extends object>(frame: T, key: keyof T & string, bounds: NumberBounds = {}): number | undefined {
  const value = fieldOf(frame, key);
  if (value === undefined || value === null) return undefined;
  return checkNumber(value, key, bounds, true);
}

function checkNumber(value: unknown, key: string, bounds: NumberBounds, integer: boolean): number {
  const what = integer ? 'an integer' : 'a number';
  if (typeof value !== 'number' || !Number.isFinite(value)) throw new InvalidRequestError(`field "${key}" must be ${what}, got ${kindOf(value)}`);
  if (integer && !Number.isInteger(value)) throw new InvalidRequestError(`field "${key}" must be an integer, got ${value}`);
  if (bounds.min !== undefined && value < bounds.min) throw new InvalidRequestError(`field "${key}" must be at least ${bounds.min}, got ${value}`);
  if (bounds.max !== undefined && value > bounds.max) throw new InvalidRequestError(`field "${key}" must be at most ${bounds.max}, got ${value}`);
  return value;
}

/** Describes a JSON value's kind for an error message. */
export function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'string') return 'a string';
  return `${typeof value} ${textOf(value)}`;
}

/** A wire value as text: a string as it is, an object or array as JSON, anything else through String(). */
export function textOf(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'object' && value !== null) return JSON.stringify(value);
  return String(value);
}

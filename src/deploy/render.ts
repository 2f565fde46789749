/**
 * Rendering the files in `systemd/`: `@NODE@` and `@PREFIX@` become the node
 * binary and the install prefix. Paths that systemd or sh would split or
 * reinterpret are refused rather than quoted.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ALL_UNITS, HTTP_UNIT } from './layout.js';

/** Values substituted into the templates. */
export interface RenderVars {
  /** Absolute path of the node binary the units run. */
  node: string;
  /** Absolute install prefix. */
  prefix: string;
}

/** A file ready to install. */
export interface RenderedFile {
  /** File name in `systemd/` (for units, the unit name). */
  name: string;
  text: string;
}

/** A problem with the values or a template; `code` is stable, the message says what to do. */
export class RenderError extends Error {
  readonly code = 'RENDER';
  constructor(message: string) {
    super(message);
    this.name = 'RenderError';
  }
}

/** Characters allowed in a substituted path: no spaces, quotes, `$`, `%`, `\` or `;`. */
const SAFE_PATH = /^\/[A-Za-z0-9._+/@:-]*$/;

/**
 * Checks that `value` is an absolute, normalised path that can be written
 * unquoted into a unit file (where `%` and `$` expand) and a shell script.
 */
export function checkPath(what: string, value: string): void {
  if (!path.isAbsolute(value)) throw new RenderError(`${what} must be an absolute path, got "${value}"`);
  if (path.normalize(value) !== value || (value.length > 1 && value.endsWith('/'))) {
    throw new RenderError(`${what} must be a normalised path without a trailing slash, got "${value}"`);
  }
  if (!SAFE_PATH.test(value)) {
    throw new RenderError(`${what} may only contain letters, digits and . _ + - @ : / (no spaces, quotes, $ or %), got "${value}"`);
  }
}

/** Substitutes the placeholders in `template`; throws on an unknown `@NAME@` left over. */
export function renderTemplate(template: string, vars: RenderVars): string {
  checkPath('the node binary', vars.node);
  checkPath('the install prefix', vars.prefix);
  if (vars.prefix === '/') throw new RenderError('the install prefix cannot be /');
  const text = template.replaceAll('@NODE@', vars.node).replaceAll('@PREFIX@', vars.prefix);
  const leftover = /@[A-Z_]+@/.exec(text);
  if (leftover) throw new RenderError(`unknown placeholder ${leftover[0]} in a template`);
  return text;
}

/** Renders `systemd/<name>` from the package at `sourceRoot`. */
export function renderFile(sourceRoot: string, name: string, vars: RenderVars): RenderedFile {
  const template = readFileSync(path.join(sourceRoot, 'systemd', name), 'utf8');
  return { name, text: renderTemplate(template, vars) };
}

/** Renders every unit (`zino-*.service`, `zino.target`). */
export function renderUnits(sourceRoot: string, vars: RenderVars): RenderedFile[] {
  return ALL_UNITS.map((unit) => renderFile(sourceRoot, unit, vars));
}

/** The HTTP front end's unit (`zino-http.service`), installed only when `[http] enabled`. */
export function renderHttpUnit(sourceRoot: string, vars: RenderVars): RenderedFile {
  return renderFile(sourceRoot, HTTP_UNIT, vars);
}

/** The `zino` command wrapper (`systemd/zino.wrapper`). */
export function renderWrapper(sourceRoot: string, vars: RenderVars): string {
  return renderFile(sourceRoot, 'zino.wrapper', vars).text;
}

/** Whether `text` is the `zino` command wrapper this installer wrote (and so may replace or remove). */
export function isOurWrapper(text: string): boolean {
  return text.includes('Written by `zino install-systemd`');
}

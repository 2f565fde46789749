/**
 * The bundle is built without esbuild's `keepNames` (docs/decisions.md): names stay as
 * written unless two collide in a chunk, and `npm run build` refuses a class of ours that
 * esbuild renamed (scripts/renamed-classes.mjs). These check the built bundle and the check.
 */
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../../src/testing/paths.js';

interface RenameCheck {
  sourceClassNames(dir: string): Set<string>;
  renamedClasses(ours: Set<string>, texts: string[]): string[];
}
const check = (await import(path.join(PACKAGE_ROOT, 'scripts', 'renamed-classes.mjs'))) as RenameCheck;

function bundleTexts(): string[] {
  const dir = path.join(PACKAGE_ROOT, 'dist', 'bundle');
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.js'))
    .map((file) => readFileSync(path.join(dir, file), 'utf8'));
}

describe('the bundle', () => {
  it('keeps the name of every class of ours, and calls no name helper per closure', () => {
    const ours = check.sourceClassNames(path.join(PACKAGE_ROOT, 'src'));
    expect(ours).toContain('ZinoError');
    expect(ours).toContain('Connection');
    const texts = bundleTexts();
    expect(check.renamedClasses(ours, texts)).toEqual([]);
    expect(texts.some((text) => text.includes('__name('))).toBe(false);
  });

  it("build's check names a class of ours that esbuild renamed, in either form, and leaves others' classes alone", () => {
    const ours = new Set(['ZinoError', 'Connection', 'Deadlines']);
    const texts = ['var ZinoError2 = class extends Error {', 'class Connection3 extends Base {}', 'var Command2 = class {', 'class Deadlines {'];
    expect(check.renamedClasses(ours, texts)).toEqual(['Connection → Connection3', 'ZinoError → ZinoError2']);
  });
});

import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findPackageRoot, packageRoot } from '../../src/runtime/index.js';
import { PACKAGE_ROOT } from '../../src/testing/paths.js';
import { VERSION } from '../../src/version.js';

describe('packageRoot', () => {
  it('is the directory of the package.json named "zino", shared by version.ts and testing/paths.ts', () => {
    const manifest = JSON.parse(readFileSync(path.join(packageRoot(), 'package.json'), 'utf8')) as { name: string; version: string };
    expect(manifest.name).toBe('zino');
    expect(PACKAGE_ROOT).toBe(packageRoot());
    expect(VERSION).toBe(manifest.version);
  });

  describe('findPackageRoot', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'zino-root-'));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it('skips package.json files of other packages and unreadable ones on the way up', () => {
      const root = path.join(dir, 'prefix');
      const inner = path.join(root, 'node_modules', 'other', 'lib');
      mkdirSync(inner, { recursive: true });
      writeFileSync(path.join(root, 'package.json'), JSON.stringify({ name: 'zino', version: '9.9.9' }));
      writeFileSync(path.join(root, 'node_modules', 'other', 'package.json'), JSON.stringify({ name: 'other' }));
      writeFileSync(path.join(inner, 'package.json'), '{ not json');
      expect(findPackageRoot(inner)).toBe(root);
    });

    it('throws when no zino package.json is above', () => {
      const lone = path.join(dir, 'lone');
      mkdirSync(lone);
      expect(() => findPackageRoot(lone)).toThrow(/cannot find the zino package root/);
    });
  });
});

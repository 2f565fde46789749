/**
 * The bundle is built without esbuild's `keepNames` (each closure made at run time would call
 * its `__name` helper: 4–7 % of the services' CPU per request, docs/benchmarks.md, issue 18,
 * round 10). Without it, esbuild changes a class's name in two cases:
 * - a class that refers to itself in its body becomes `var Foo = class _Foo …`, so its
 *   `name` is `_Foo`. The logger gives a logged error's `type` its name back (runtime/log.ts);
 * - where two top-level names of one chunk collide, it renames the later one: `Foo2`. Nothing
 *   can give that name back, and for a class of ours it would change what logs show (pino's
 *   `type` of a logged error is its constructor's name), so `npm run build` fails when it
 *   happens (scripts/bundle.mjs), and says which.
 */
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';

/** Names of the classes declared in `dir`'s TypeScript sources (declaration files left out: they describe others' code). */
export function sourceClassNames(dir) {
  const names = new Set();
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts') || entry.name.endsWith('.d.ts')) continue;
    const text = readFileSync(path.join(entry.parentPath ?? entry.path, entry.name), 'utf8');
    for (const match of text.matchAll(/\bclass\s+([A-Za-z_$][\w$]*)\s*(?:<[^>{]*>\s*)?(?:extends\b|implements\b|\{)/g)) names.add(match[1]);
  }
  return names;
}

/** Classes of `ours` that the bundle's `texts` declare under another name (`Foo2 = class`, `class Foo2`). */
export function renamedClasses(ours, texts) {
  const renamed = new Set();
  const declaration = /(?:\bclass\s+|\b(?:var|let|const)\s+)([A-Za-z_$][\w$]*?)(\d+)(?=\s*=\s*class\b|\s+extends\b|\s*\{)/g;
  for (const text of texts) {
    for (const [, base, digits] of text.matchAll(declaration)) {
      if (ours.has(base) && !ours.has(`${base}${digits}`)) renamed.add(`${base} → ${base}${digits}`);
    }
  }
  return [...renamed].sort();
}

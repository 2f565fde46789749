// Copies what the compiled code reads next to itself and tsc does not emit: the
// Landlock view's launcher (src/services/exc/landlock/zino-sandbox.py, see
// src/services/exc/sandbox.ts). Run by `npm run build` after tsc; dist/ is what
// `npm pack` and `zino install-systemd` ship.
import { chmodSync, copyFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const ASSETS = ['src/services/exc/landlock/zino-sandbox.py'];

for (const asset of ASSETS) {
  const target = path.join(root, 'dist', asset);
  mkdirSync(path.dirname(target), { recursive: true });
  copyFileSync(path.join(root, asset), target);
  chmodSync(target, 0o644);
}

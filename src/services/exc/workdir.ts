/** A fresh private working directory per run, removed afterwards whatever the code did to it. */
import { chmod, chown, mkdtemp, readdir, rm, writeFile, lstat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** Creates a 0700 directory under the system temp dir and writes `code` to `fileName` in it, both owned by `owner` when given. */
export async function createWorkdir(fileName: string, code: string, owner?: { uid: number; gid: number }): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'zino-exc-'));
  await chmod(dir, 0o700);
  const file = path.join(dir, fileName);
  await writeFile(file, code, { mode: 0o600 });
  if (owner) {
    await chown(file, owner.uid, owner.gid);
    await chown(dir, owner.uid, owner.gid);
  }
  return dir;
}

/** Removes `dir`, first restoring permissions the code may have taken away. */
export async function removeWorkdir(dir: string): Promise<void> {
  try {
    await rm(dir, { recursive: true, force: true, maxRetries: 2 });
  } catch {
    await makeWritable(dir);
    await rm(dir, { recursive: true, force: true, maxRetries: 2 });
  }
}

async function makeWritable(dir: string): Promise<void> {
  try {
    await chmod(dir, 0o700);
    for (const entry of await readdir(dir)) {
      const full = path.join(dir, entry);
      if ((await lstat(full)).isDirectory()) await makeWritable(full);
    }
  } catch {
    // best effort; rm reports what is left
  }
}

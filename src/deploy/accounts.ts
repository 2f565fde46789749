/**
 * Users and groups of the target system, read from its /etc/passwd and
 * /etc/group (inside the root being installed to), so that an installation into
 * another root never asks the host's name service.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

/** An account's numeric id and, for a group, its members. */
export interface Account {
  name: string;
  id: number;
  members: string[];
}

/** Parses `name:x:id:...` lines; field 3 is the id, field 4 the group's members. */
export function parseAccounts(text: string): Account[] {
  const out: Account[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '' || line.startsWith('#')) continue;
    const fields = line.split(':');
    const id = Number(fields[2]);
    if (fields[0] && Number.isInteger(id)) out.push({ name: fields[0], id, members: (fields[3] ?? '').split(',').filter(Boolean) });
  }
  return out;
}

function readAccounts(root: string, file: 'passwd' | 'group'): Account[] {
  try {
    return parseAccounts(readFileSync(path.join(root, 'etc', file), 'utf8'));
  } catch {
    return [];
  }
}

/** The user `name` in the system at `root`, if present. */
export function findUser(root: string, name: string): Account | undefined {
  return readAccounts(root, 'passwd').find((a) => a.name === name);
}

/** The group `name` in the system at `root`, if present. */
export function findGroup(root: string, name: string): Account | undefined {
  return readAccounts(root, 'group').find((a) => a.name === name);
}

/**
 * docs/configuration.md is generated from the schema (`npm run docs:config`);
 * these tests fail when the page, the schema and ZINO.toml drift apart.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONFIG_REFERENCE_PATH, CONTRACT_KEYS, KEY_NOTES, renderConfigReference, tomlLiteral } from '../../src/runtime/config/reference.js';
import { SCHEMA, type AnyKeySpec } from '../../src/runtime/index.js';

const ROOT = path.join(__dirname, '../..');
const page = readFileSync(path.join(ROOT, CONFIG_REFERENCE_PATH), 'utf8');
const sections = SCHEMA as unknown as Record<string, Record<string, AnyKeySpec>>;
/** Every key as "section.key", and each key of a table of tables as "section.key.NAME.entry_key". */
const specs = new Map<string, AnyKeySpec>(
  Object.entries(sections).flatMap(([section, keys]) =>
    Object.entries(keys).flatMap(([key, spec]): [string, AnyKeySpec][] => [
      [`${section}.${key}`, spec],
      ...(spec.kind === 'tables' ? Object.entries(spec.entry).map(([k, s]): [string, AnyKeySpec] => [`${section}.${key}.NAME.${k}`, s]) : []),
    ]),
  ),
);
const schemaKeys = [...specs.keys()];

/** "section.key" (or "section.key.NAME.entry_key") → the default cell of its row, read from the page's tables. */
function documentedDefaults(text: string): Map<string, string> {
  const rows = new Map<string, string>();
  let section: string | undefined;
  for (const line of text.split('\n')) {
    const heading = /^### `\[(\w+)\]`$/.exec(line) ?? /^#### `\[([\w.]+\.NAME)\]`$/.exec(line);
    if (heading) section = heading[1];
    const row = /^\| `(\w+)` \| \w+ \| ([^|]*) \|/.exec(line);
    if (row && section !== undefined) rows.set(`${section}.${row[1]}`, row[2] ?? '');
  }
  return rows;
}

describe('docs/configuration.md', () => {
  it('is what `npm run docs:config` generates from the schema', () => {
    expect(page, 'docs/configuration.md is out of date: run "npm run docs:config"').toBe(renderConfigReference());
  });

  it('has one row per schema key, with its exact default, and no other', () => {
    const rows = documentedDefaults(page);
    expect([...rows.keys()].sort()).toEqual([...schemaKeys].sort());
    for (const [id, spec] of specs) expect(rows.get(id), id).toMatch(new RegExp(`^\`${escape(tomlLiteral(spec))}\``));
  });

  it('names the environment variables and the file search order', () => {
    for (const variable of ['ZINO_CONFIG', 'ZINO_DIR', 'LLM_API_KEY', 'ZINO_LOG_LEVEL']) expect(page).toContain(`| \`${variable}\` |`);
    expect(page).toMatch(/1\. `--config FILE`[\s\S]*2\. else `\$ZINO_CONFIG`[\s\S]*3\. else `\.\/ZINO\.toml`/);
  });

  it('has notes and contract marks only for keys that exist', () => {
    for (const id of [...CONTRACT_KEYS, ...Object.keys(KEY_NOTES)]) expect(schemaKeys, id).toContain(id);
  });

  it('agrees with ZINO.toml on which keys are ZINO additions', () => {
    // In ZINO.toml a key's comment starts with "ZINO:" when the key is not the contract's.
    // The keys of a commented example table ("# [mcp.servers.files]") belong to the table of
    // tables ("mcp.servers.NAME.…"), an addition when the comment above the example says so.
    const additions = new Set<string>();
    let section = '';
    let example: { id: string; zino: boolean } | undefined;
    let comment: string[] = [];
    for (const line of readFileSync(path.join(ROOT, 'ZINO.toml'), 'utf8').split('\n')) {
      const header = /^\[(\w+)\]$/.exec(line);
      const table = /^# \[(\w+\.\w+)\.\w+\]$/.exec(line);
      const key = /^#? ?(\w+) = /.exec(line);
      const zino = comment.some((c) => c.startsWith('# ZINO:'));
      if (header) {
        section = header[1] ?? '';
        example = undefined;
        comment = [];
      } else if (table) {
        example = { id: `${table[1]}.NAME`, zino };
        if (zino) additions.add(table[1] ?? '');
        comment = [];
      } else if (key) {
        if (example ? example.zino : zino) additions.add(example ? `${example.id}.${key[1]}` : `${section}.${key[1]}`);
        comment = [];
      } else if (line.startsWith('#')) {
        comment.push(line);
      }
    }
    expect([...additions].sort()).toEqual(schemaKeys.filter((id) => !CONTRACT_KEYS.has(id)).sort());
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

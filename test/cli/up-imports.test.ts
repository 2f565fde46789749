/**
 * `zino up` is on the cold start's path until it spawns the services: what it loads before
 * that must be what it needs to spawn them. The client library (for the banner) comes after.
 */
import { describe, expect, it } from 'vitest';
import { staticSources } from '../helpers/imports.js';

describe('zino up', () => {
  it('loads the client library only after it has spawned the services', () => {
    const sources = staticSources('src/cli/commands/up.ts');
    expect(sources).toContain('src/cli/up/supervisor.ts');
    expect(sources).toContain('src/cli/config.ts');
    expect(sources.filter((source) => source.startsWith('src/client/') || source.startsWith('src/protocol/'))).toEqual([]);
  });
});

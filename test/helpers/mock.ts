/**
 * The suite-plus-mock set-up of the integration tests: one mock LLM per test file,
 * and the config overrides that point services at it.
 */
import { afterAll, beforeAll } from 'vitest';
import { startMockLlm, type MockLlm } from '../../src/testing/mock-llm/server.js';
import type { MockScript } from '../../src/testing/mock-llm/script.js';
import { startServices, type ConfigOverrides, type ServiceGroup } from '../../src/testing/suite.js';
import { tempDir } from './util.js';

/**
 * Overrides that point rtr at `mock` (model "m", key "k") and run exc without a
 * sandbox, where every run is a host run: `[approval] mode = "allow"` lets them run,
 * as these tests are about other things (test/e2e/approval.test.ts is about approval).
 * `extra` wins, section by section.
 */
export function mockOverrides(mock: MockLlm, extra: ConfigOverrides = {}): ConfigOverrides {
  const base: ConfigOverrides = { api: { base_url: mock.baseUrl, key: 'k' }, service: { model: 'm' }, exc: { sandbox: 'none' }, approval: { mode: 'allow' } };
  const out: Record<string, object> = { ...base };
  for (const [section, values] of Object.entries(extra)) out[section] = { ...(out[section] ?? {}), ...values };
  return out;
}

/** Starts a mock LLM for this test file (closed after all its tests); `mock` is valid inside tests and hooks. */
export function useMockLlm(): { readonly mock: MockLlm; script: (value: MockScript) => void } {
  let mock: MockLlm | undefined;
  beforeAll(async () => {
    mock = await startMockLlm();
  });
  afterAll(async () => {
    await mock?.close();
  });
  const get = (): MockLlm => {
    if (!mock) throw new Error('the mock LLM is not started yet');
    return mock;
  };
  return {
    get mock() {
      return get();
    },
    script(value) {
      get().reset(value);
    },
  };
}

/** Starts `names` in a fresh temp dir on a config pointed at `mock`. */
export async function startWithMock(
  mock: MockLlm,
  names: Parameters<typeof startServices>[0],
  prefix: string,
  extra: ConfigOverrides = {},
): Promise<{ group: ServiceGroup; cleanup: () => void }> {
  const { dir, cleanup } = tempDir(prefix);
  try {
    return { group: await startServices(names, dir, mockOverrides(mock, extra)), cleanup };
  } catch (err) {
    cleanup();
    throw err;
  }
}

import { configDefaults, defineConfig } from 'vitest/config';

/**
 * Unit tests: pure logic, no build, no child processes, no sockets (files in a temp
 * directory are fine). `npm run test:unit` runs only these, straight from the sources.
 */
const UNIT = [
  'test/services/runner-record.test.ts',
  'test/agr/format.test.ts',
  'test/agr/mcp.test.ts',
  'test/agr/parser.test.ts',
  'test/cli/chat-commands.test.ts',
  'test/cli/degraded.test.ts',
  'test/cli/display.test.ts',
  'test/cli/serve-argv.test.ts',
  'test/frontends/http-units.test.ts',
  'test/cli/exit-table.test.ts',
  'test/cli/waiting.test.ts',
  'test/runtime/catalog.test.ts',
  'test/runtime/config-reference.test.ts',
  'test/runtime/config.test.ts',
  'test/runtime/deadlines.test.ts',
  'test/runtime/frame.test.ts',
  'test/runtime/log.test.ts',
  'test/runtime/messages.test.ts',
  'test/runtime/package-root.test.ts',
  'test/runtime/protocol-doc.test.ts',
  'test/runtime/validate.test.ts',
  'test/services/ctx-budget.test.ts',
  'test/services/demo.test.ts',
  'test/services/exc-approval.test.ts',
  'test/services/exc-mcp-units.test.ts',
  'test/services/exc-sandbox.test.ts',
  'test/services/exc-seccomp.test.ts',
  'test/services/mem-history-tail.test.ts',
  'test/services/mem-index-bound.test.ts',
  'test/services/mem-lines.test.ts',
  'test/services/mem-naming.test.ts',
  'test/services/mem-snapshot.test.ts',
  'test/services/tfidf.test.ts',
  'test/systemd/apply.test.ts',
  'test/systemd/plan.test.ts',
  'test/systemd/render.test.ts',
  'test/systemd/units.test.ts',
];

export default defineConfig({
  test: {
    pool: 'forks',
    maxWorkers: 2,
    reporters: ['default'],
    projects: [
      // A hang guard, not a speed bound: a loaded machine may take several times longer.
      { extends: true, test: { name: 'unit', include: UNIT, testTimeout: 30_000 } },
      {
        extends: true,
        test: {
          name: 'integration',
          // Everything else: real processes on real sockets, running `dist/` (so it needs `npm run build`).
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...UNIT],
          // Give them room on a 2-core machine.
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});

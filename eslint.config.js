// ESLint flat config. The type-aware rules read tsconfig.test.json, which includes src/, test/,
// bench/ and vitest.config.ts: one TypeScript program for the whole tree. Choices: docs/decisions.md.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

export default defineConfig(
  { ignores: ['dist/', 'node_modules/', '.zino/', 'data/', 'coverage/'] },
  js.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        project: './tsconfig.test.json',
        tsconfigRootDir: import.meta.dirname,
      },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // The three this config exists for (the first two are in recommendedTypeChecked already).
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      // A `return promise` inside try/catch/finally skips the handler: await it there.
      '@typescript-eslint/return-await': ['error', 'error-handling-correctness-only'],
      // tsc's noUnusedLocals/noUnusedParameters already enforce this (with the `_` convention).
      '@typescript-eslint/no-unused-vars': 'off',
      // `async` without `await` is how a method that returns a promise turns a synchronous
      // throw into a rejection (e.g. the demo model's complete()); no bug class is caught.
      '@typescript-eslint/require-await': 'off',
      // Passing on what was caught (`unknown`) or an AbortSignal's reason (`any`) keeps the
      // original error; reject('text') is still reported. Same defaults as only-throw-error.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingAny: true, allowThrowingUnknown: true }],
      // `let x; const f = () => x; x = await …`: a closure that reads x before it is set
      // (runService's signal handlers) cannot use const without a TDZ error.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
    },
  },
  {
    // On Node 20's V8 an object literal that starts with a spread and goes on (`{ ...a, b }`,
    // `{ ...a, ...b }`) gets a hidden class of its own every time it runs: every read of such an
    // object anywhere is a cache miss (docs/benchmarks.md, round 11). The shipped code writes
    // `Object.assign({}, a)` and then its fields, or the fields first: `{ b, ...a }`.
    // The CLI and the test helpers run once per command or test: left as they read best. The
    // bench's relays are held to it too: the floor and the split must not pay a cost the suite does not.
    files: ['src/**/*.ts', 'bench/*-relay.ts'],
    ignores: ['src/cli/**', 'src/testing/**'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: 'ObjectExpression[properties.length>1] > SpreadElement:first-child',
          message:
            'A literal that starts with a spread and goes on gets a new hidden class each time on Node 20: write Object.assign({}, a) and then the fields, or the fields first.',
        },
      ],
    },
  },
  {
    files: ['test/**/*.ts'],
    rules: {
      // vitest's asymmetric matchers (expect.any, expect.stringMatching, …) are typed `any`.
      '@typescript-eslint/no-unsafe-assignment': 'off',
    },
  },
  {
    // Plain JavaScript (this file, test fixtures) is outside the TypeScript program.
    files: ['**/*.js', '**/*.mjs'],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: {
      globals: { process: 'readonly', console: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly' },
    },
  },
);

/**
 * Checking a model's arguments against an MCP tool's input schema before the call,
 * with ajv (see docs/decisions.md): a bad call comes back at once as an error naming
 * what is wrong, instead of as whatever the server makes of it.
 *
 * The dialect is chosen by `$schema`: 2020-12 (MCP's default dialect) or 2019-09 with
 * ajv's 2020 class, anything else with its draft-07 class, which reads the keywords
 * tool schemas use (type, properties, required, items, enum, anyOf, …) the same way.
 * A schema ajv cannot compile is not checked (the server still checks it); the reason
 * is kept for the log. Formats are annotations only, as JSON Schema says by default.
 */
import type { McpSdk, SchemaCompiler } from './sdk.js';

/** Checks one tool's arguments: `undefined` when they fit, else what is wrong. */
export type ArgumentCheck = (args: unknown) => string | undefined;

/** Compiles input schemas; one per server, renewed when its tool list is (so old schemas do not pile up in ajv). */
export class ArgumentChecker {
  private draft07: SchemaCompiler | undefined;
  private draft2020: SchemaCompiler | undefined;
  private readonly checks = new WeakMap<object, ArgumentCheck | { error: string }>();

  constructor(private readonly sdk: McpSdk) {}

  /** The check for `schema`, compiled once per schema object; `{ error }` when it cannot be compiled. */
  checkFor(schema: Record<string, unknown>): ArgumentCheck | { error: string } {
    let check = this.checks.get(schema);
    if (!check) {
      check = this.compile(schema);
      this.checks.set(schema, check);
    }
    return check;
  }

  private compile(schema: Record<string, unknown>): ArgumentCheck | { error: string } {
    const { $schema, $id: _id, ...rest } = schema;
    const modern = typeof $schema === 'string' && /\/draft\/(2020-12|2019-09)\//.test($schema);
    const options = { strict: false, allErrors: true, validateFormats: false, validateSchema: false, logger: false } as const;
    const ajv = modern ? (this.draft2020 ??= new this.sdk.Ajv2020(options)) : (this.draft07 ??= new this.sdk.Ajv(options));
    try {
      const validate = ajv.compile(rest);
      return (args) => (validate(args) ? undefined : ajv.errorsText(validate.errors, { separator: '; ', dataVar: 'arguments' }));
    } catch (err) {
      return { error: (err as Error).message };
    }
  }
}

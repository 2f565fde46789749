/** The executors exc offers: one per tool definition, with its validator's availability. */
import type { ToolDef } from '../../runtime/index.js';
import type { ExecutorInfo } from '../../protocol/exc.js';
import { which } from './which.js';

/** An executor ready to run code. */
export interface Executor {
  name: string;
  tool: ToolDef;
  /** The validator command when one is configured and installed. */
  validator?: string[] | undefined;
}

/** Builds the executor table from the tools. */
export function buildExecutors(tools: readonly ToolDef[]): Map<string, Executor> {
  const out = new Map<string, Executor>();
  for (const tool of tools) {
    const validator = tool.staticAnalysis && tool.staticAnalysis[0] && which(tool.staticAnalysis[0]) ? tool.staticAnalysis : undefined;
    out.set(tool.executor, { name: tool.executor, tool, validator });
  }
  return out;
}

/** What `capabilities` says about an executor. */
export function describeExecutor(executor: Executor): ExecutorInfo {
  return {
    command: executor.tool.command,
    file_extension: executor.tool.fileExtension,
    static_analysis: executor.tool.staticAnalysis,
    validator_available: executor.validator !== undefined,
    tool: executor.tool.name,
  };
}

/**
 * File name the code is written to inside the working directory. Not a module name
 * of any standard library: Python puts the script's directory first on its import
 * path, so a script called `code.py` was imported again by `import pdb`.
 */
export function codeFileName(executor: Executor): string {
  return `zino_program${executor.tool.fileExtension}`;
}

/**
 * The `[approval]` policy for host runs, as a pure function: refused outright
 * (`mode = "deny"`), allowed by a rule or by `mode = "allow"`, or left to a person,
 * who is asked when the caller can relay the question and otherwise replaced by
 * `unattended`. Each outcome names how it was reached, as the audit log records it.
 */
import type { ApprovalMode, UnattendedPolicy } from '../../runtime/index.js';

/** One compiled allow rule. */
export type AllowRule = { kind: 'executable'; name: string } | { kind: 'regex'; pattern: RegExp };

/** The `[approval]` keys the decision needs. */
export interface ApprovalPolicy {
  mode: ApprovalMode;
  unattended: UnattendedPolicy;
  rules: readonly AllowRule[];
}

/** What to do with a host run. `how` is the audit log's word for it. */
export type HostDecision =
  | { verdict: 'allow'; how: 'policy:allow' | 'unattended:allow' | `rule:${number}` }
  | { verdict: 'deny'; how: 'policy:deny' | 'unattended:deny'; message: string }
  | { verdict: 'ask' };

/** What is known about the run when deciding. */
export interface HostRunFacts {
  code: string;
  /** The caller relays `approval_required` frames to someone who can answer. */
  canAsk: boolean;
  /** The run is on the host because no sandbox can be used, not because the model asked. */
  noSandbox: boolean;
}

/**
 * A command a rule may match: one line of plain words separated by spaces. No shell
 * syntax at all (`;`, `&`, `|`, quotes, `$`, redirections, globs, `~`, newlines), so
 * what a rule matches is what runs: one program with those arguments.
 */
const PLAIN_COMMAND = /^[\w./:=@%+,-]+(?: +[\w./:=@%+,-]+)*$/u;

/** Compiles `[approval] allow_rules` (already checked by the config loader). */
export function compileRules(list: readonly string[]): AllowRule[] {
  return list.map((rule) =>
    rule.length >= 2 && rule.startsWith('/') && rule.endsWith('/')
      ? { kind: 'regex', pattern: new RegExp(`^(?:${rule.slice(1, -1)})$`, 'u') }
      : { kind: 'executable', name: rule },
  );
}

/** The 1-based number of the first rule `code` matches, or undefined. */
export function matchRule(rules: readonly AllowRule[], code: string): number | undefined {
  const command = code.trim();
  if (!PLAIN_COMMAND.test(command)) return undefined;
  const first = command.split(' ', 1)[0];
  const index = rules.findIndex((rule) => (rule.kind === 'executable' ? rule.name === first : rule.pattern.test(command)));
  return index < 0 ? undefined : index + 1;
}

/** Why a run or call was refused outright, in words for the model: by `mode = "deny"`, or by `unattended = "deny"`. */
interface Refusals {
  policy: string;
  unattended: string;
}

/**
 * The one order of `[approval]`: `mode = "deny"` refuses; a matching allow rule
 * (`rule`, 1-based) allows; `mode = "allow"` allows; a caller that relays questions
 * gets a person asked; otherwise `unattended` decides.
 */
function decide(policy: ApprovalPolicy, canAsk: boolean, rule: number | undefined, refusals: Refusals): HostDecision {
  if (policy.mode === 'deny') return { verdict: 'deny', how: 'policy:deny', message: refusals.policy };
  if (rule !== undefined) return { verdict: 'allow', how: `rule:${rule}` };
  if (policy.mode === 'allow') return { verdict: 'allow', how: 'policy:allow' };
  if (canAsk) return { verdict: 'ask' };
  if (policy.unattended === 'allow') return { verdict: 'allow', how: 'unattended:allow' };
  return { verdict: 'deny', how: 'unattended:deny', message: refusals.unattended };
}

/** Decides a host run under `policy`. */
export function decideHostRun(policy: ApprovalPolicy, facts: HostRunFacts): HostDecision {
  const rule = policy.mode === 'deny' ? undefined : matchRule(policy.rules, facts.code);
  return decide(policy, facts.canAsk, rule, {
    policy: facts.noSandbox
      ? 'it was not run: no sandbox can be used on this host, so every run is a host run, and host runs are disabled ([approval] mode = "deny"). Tell the user; no code can run here.'
      : 'it was not run: host runs are disabled here ([approval] mode = "deny"). Run it sandboxed (without "host"; the sandbox can look but not change anything), or tell the user what to run.',
    unattended:
      'it was not run: a host run needs a person to approve it, and this request came from a client that cannot ask one ([approval] unattended = "deny"). Tell the user what you wanted to run and why, so they can run it or ask again from a terminal.',
  });
}

/** What the model reads when a person denied the run, or nobody answered in time. */
export function personDenial(how: 'denied' | 'timeout', note: string | undefined, timeoutS: number): string {
  if (how === 'timeout')
    return `it was not run: nobody approved this host run within ${timeoutS} s, which counts as a denial. Tell the user what you wanted to run and why.`;
  const said = note !== undefined && note.trim() !== '' ? `the operator denied this: ${note.trim()}` : 'the operator denied this (no reason given)';
  return `${said}. It was not run; do not ask for the same host run again. Answer without it, or do what you can sandboxed.`;
}

/**
 * Decides a call of an MCP tool that needs approval (its server is not `trusted`
 * and the tool is not annotated `readOnlyHint`) under `policy`: the same order as a
 * host run, without the allow rules, which match command lines and have none to
 * match here (an operator allows a server's tools with `trusted = true`, and narrows
 * them with `tools`). `call` names the tool for the model's messages.
 */
export function decideMcpCall(policy: ApprovalPolicy, facts: { canAsk: boolean; call: string; server: string }): HostDecision {
  const trust = `an operator can let its server's tools run without approval with trusted = true in [mcp.servers.${facts.server}]`;
  return decide(policy, facts.canAsk, undefined, {
    policy: `${facts.call} was not called: it may change things on the host, and host actions are disabled here ([approval] mode = "deny"; ${trust}). Use a read-only tool, or tell the user what you wanted to do.`,
    unattended:
      `${facts.call} was not called: it may change things on the host, so a person must approve it, and this request came from a client that cannot ask one ` +
      `([approval] unattended = "deny"; ${trust}). Tell the user what you wanted to do and why, so they can do it or ask again from a terminal.`,
  });
}

/** What the model reads when a person denied an MCP call, or nobody answered in time. */
export function mcpPersonDenial(call: string, how: 'denied' | 'timeout', note: string | undefined, timeoutS: number): string {
  if (how === 'timeout')
    return `${call} was not called: nobody approved it within ${timeoutS} s, which counts as a denial. Tell the user what you wanted to do and why.`;
  const said = note !== undefined && note.trim() !== '' ? `the operator denied this: ${note.trim()}` : 'the operator denied this (no reason given)';
  return `${said}. ${call} was not called; do not call it again with the same arguments. Answer without it, or use a read-only tool.`;
}

/**
 * `zino approvals [ID]`, `zino approve ID`, `zino deny ID [--note TEXT]`: the
 * pending host-run approvals of a running suite, answered from any terminal that can
 * use the daemon socket (the asking request keeps waiting on its own connection).
 */
import { RemoteError, ZinoError, type PendingApproval, type ZinoClient } from '../../client/index.js';
import { EXIT } from '../../runtime/exit.js';
import { describeApproval } from '../approval-prompt.js';
import { cliClient } from '../client.js';
import { fail, howToStart, type ConfigOptions } from '../config.js';

/** Adds `approvals`, `approve` and `deny` to `program`; `withConfig` adds `--config` and `--dir`. */
export async function listCommand(id: string | undefined, options: ConfigOptions & { json?: boolean }): Promise<void> {
  const client = cliClient(options);
  try {
    const reply = await client.approvals(id === undefined ? {} : { id });
    if (options.json) {
      process.stdout.write(`${JSON.stringify(reply)}\n`);
    } else if (reply.pending.length === 0) {
      process.stdout.write('No host run is waiting for approval.\n');
    } else {
      for (const pending of reply.pending) process.stdout.write(describePending(pending));
      const omitted = reply.omitted ?? 0;
      if (omitted > 0) process.stdout.write(`… and ${omitted} more that did not fit in one reply.\n`);
      process.stdout.write(`\nAnswer with: zino approve ID   or   zino deny ID --note "why"${flagsOf(options)}\n`);
    }
    process.exit(EXIT.OK);
  } catch (err) {
    failWith(client, err);
  }
}

export async function answerCommand(id: string, decision: 'allow' | 'deny', options: ConfigOptions & { note?: string }): Promise<void> {
  const client = cliClient(options);
  try {
    if (decision === 'allow') await client.approve(id, { note: options.note });
    else await client.deny(id, { note: options.note });
    process.stdout.write(decision === 'allow' ? `approved ${id}: the run goes ahead\n` : `denied ${id}: the model is told\n`);
    process.exit(EXIT.OK);
  } catch (err) {
    failWith(client, err);
  }
}

function describePending(pending: PendingApproval): string {
  const text = describeApproval({ type: 'approval_required', ...pending });
  const header = `request ${pending.request_id}${pending.channel_id === undefined ? '' : `, channel ${pending.channel_id}`}, asked ${pending.asked_at}`;
  const cut = pending.code_truncated ? `  (program cut at 4096 characters of ${pending.code_bytes} bytes: zino approvals ${pending.id} shows it whole)\n` : '';
  return `${text.replace(/^\n/, '')}  ${header}\n${cut}\n`;
}

function flagsOf(options: ConfigOptions): string {
  return [options.config !== undefined ? ` --config ${options.config}` : '', options.dir !== undefined ? ` --dir ${options.dir}` : ''].join('');
}

function failWith(client: ZinoClient, err: unknown): never {
  if (err instanceof RemoteError) fail(err.message, EXIT.FAILURE);
  if (err instanceof ZinoError && (err.code === 'UPSTREAM_UNAVAILABLE' || err.code === 'TIMEOUT'))
    fail(howToStart(client.socket('daemon'), err.detail.errno ?? err.code), EXIT.UNAVAILABLE);
  fail((err as Error).message, EXIT.FAILURE);
}

/**
 * A per-file operation queue with group commit.
 *
 * Operations run one at a time in arrival order. Consecutive appends waiting in the
 * queue are handed to `commit` together, so N concurrent appends cost one write and
 * one fsync; each caller's promise settles only after that fsync (or its failure).
 * Anything else (a read, a clear) runs as an exclusive task in its place in line,
 * so it sees exactly the appends acknowledged before it arrived.
 */

/** Writes a batch durably and returns one result per item, in order. */
export type Commit<T, R> = (items: T[]) => Promise<R[]>;

interface AppendOp<T, R> {
  kind: 'append';
  item: T;
  resolve: (result: R) => void;
  reject: (err: unknown) => void;
}

interface TaskOp {
  kind: 'task';
  run: () => Promise<void>;
}

/** Upper bound of items per commit, so one write stays a sane size. */
const MAX_BATCH = 1024;

/** See the module comment. */
export class OpQueue<T, R> {
  private readonly ops: (AppendOp<T, R> | TaskOp)[] = [];
  private draining: Promise<void> | undefined;

  constructor(private readonly commit: Commit<T, R>) {}

  /** True when nothing is queued or running. */
  get idle(): boolean {
    return this.draining === undefined;
  }

  /** Queues `item` for the next group commit; resolves with its result after the fsync. */
  append(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.ops.push({ kind: 'append', item, resolve, reject });
      this.kick();
    });
  }

  /** Runs `fn` alone, after everything queued before it. */
  exclusive<V>(fn: () => Promise<V>): Promise<V> {
    return new Promise<V>((resolve, reject) => {
      this.ops.push({ kind: 'task', run: () => fn().then(resolve, reject) });
      this.kick();
    });
  }

  /** Resolves when the queue is empty. */
  async drained(): Promise<void> {
    while (this.draining) await this.draining;
  }

  private kick(): void {
    this.draining ??= this.drain().finally(() => {
      this.draining = undefined;
      // An op queued during the last await of drain() would otherwise wait forever.
      if (this.ops.length > 0) this.kick();
    });
  }

  private async drain(): Promise<void> {
    for (let op = this.ops[0]; op !== undefined; op = this.ops[0]) {
      if (op.kind === 'task') {
        this.ops.shift();
        await op.run();
        continue;
      }
      const batch: AppendOp<T, R>[] = [];
      while (batch.length < MAX_BATCH && this.ops[0]?.kind === 'append') batch.push(this.ops.shift() as AppendOp<T, R>);
      try {
        const results = await this.commit(batch.map((b) => b.item));
        batch.forEach((b, i) => b.resolve(results[i] as R));
      } catch (err) {
        for (const b of batch) b.reject(err);
      }
    }
  }
}

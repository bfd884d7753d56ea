/**
 * The store work one turn of the event loop may take for lazy writes and flushes together. A
 * lazy write settles in microtasks, so a caller that awaits thousands of them in a loop (a
 * batch of visit counters) would otherwise never give the loop back: every request waits
 * behind the whole batch. Once a turn has spent `budgetMs`, the next lazy write resolves on a
 * later turn instead, and a flush sharing the budget (Slicer's `shared`) pauses too.
 */
export class TurnBudget {
  /** When this turn's first lazy write started (performance.now()); -1: none yet this turn. */
  #start = -1;
  /** Writes that waited for a later turn (tests read it). */
  yields = 0;

  constructor(
    readonly budgetMs = 4,
    /** The clock, ms (tests give their own). */
    readonly now: () => number = () => performance.now(),
  ) {}

  /** Undefined while the turn's budget lasts; otherwise a promise resolved on a later turn. */
  spend(): Promise<void> | undefined {
    const now = this.now();
    if (this.#start < 0) {
      this.#start = now;
      // The check phase closes this turn's account (a write after it opens the next one).
      setImmediate(() => (this.#start = -1));
      return undefined;
    }
    if (now - this.#start <= this.budgetMs) return undefined;
    this.yields++;
    return new Promise<void>((resolve) => setImmediate(resolve));
  }
}

import type { MessagePort, Worker } from 'node:worker_threads';
import { StoreError, type StoreErrorCode } from '../state/types.js';

/** What a peer posts to and hears from: a worker, the worker's parentPort, or a MessagePort. */
export type Endpoint = Pick<MessagePort | Worker, 'postMessage' | 'on' | 'off'>;

type Handler = (...args: never[]) => unknown;

/** An error as it crosses threads: its kind (StoreError keeps its code) and message. */
interface WireError {
  name: string;
  message: string;
  code?: StoreErrorCode;
}

type Wire =
  | { rpc: 'req'; id: number; m: string; a: unknown[] }
  | { rpc: 'res'; id: number; v: unknown }
  | { rpc: 'err'; id: number; e: WireError }
  | { rpc: 'note'; m: string; a: unknown[] };

export function toWire(err: unknown): WireError {
  if (err instanceof StoreError) return { name: err.name, message: err.message, code: err.code };
  if (err instanceof Error) return { name: err.name, message: err.message };
  return { name: 'Error', message: String(err) };
}

export function fromWire(e: WireError): Error {
  if (e.name === 'StoreError' && e.code !== undefined) return new StoreError(e.code, e.message);
  const err = new Error(e.message);
  err.name = e.name;
  return err;
}

/**
 * Calls between two threads over one endpoint: `call` resolves with what the other side's
 * handler of that name returned (awaited), or rejects with its error (a StoreError keeps its
 * code); `notify` sends without an answer. Arguments and results are structured-cloned. A call
 * pending when the other side goes away (`closed`) rejects.
 */
export class RpcPeer {
  readonly #end: Endpoint;
  readonly #handlers: Record<string, Handler>;
  readonly #pending = new Map<number, { resolve(v: unknown): void; reject(e: unknown): void }>();
  #next = 0;
  #gone: Error | undefined;
  readonly #onMessage = (msg: unknown): void => this.#receive(msg as Wire);

  constructor(end: Endpoint, handlers: Record<string, Handler>) {
    this.#end = end;
    this.#handlers = handlers;
    end.on('message', this.#onMessage);
  }

  call<T>(method: string, ...args: unknown[]): Promise<T> {
    if (this.#gone) return Promise.reject(this.#gone);
    const id = ++this.#next;
    return new Promise<T>((resolve, reject) => {
      this.#pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.#end.postMessage({ rpc: 'req', id, m: method, a: args } satisfies Wire);
    });
  }

  notify(method: string, ...args: unknown[]): void {
    if (!this.#gone) this.#end.postMessage({ rpc: 'note', m: method, a: args } satisfies Wire);
  }

  /** The other side is gone: pending and later calls reject with `err`. */
  closed(err: Error): void {
    this.#gone ??= err;
    this.#end.off('message', this.#onMessage);
    for (const p of this.#pending.values()) p.reject(this.#gone);
    this.#pending.clear();
  }

  #receive(msg: Wire): void {
    if (typeof msg !== 'object' || msg === null || !('rpc' in msg)) return;
    if (msg.rpc === 'res' || msg.rpc === 'err') {
      const p = this.#pending.get(msg.id);
      if (!p) return;
      this.#pending.delete(msg.id);
      if (msg.rpc === 'res') p.resolve(msg.v);
      else p.reject(fromWire(msg.e));
      return;
    }
    const h = this.#handlers[msg.m];
    if (msg.rpc === 'note') {
      if (h) void (async () => (h as (...a: unknown[]) => unknown)(...msg.a))().catch(() => {});
      return;
    }
    const { id } = msg;
    void (async () => {
      if (!h) throw new Error(`no handler for ${msg.m}`);
      return (h as (...a: unknown[]) => unknown)(...msg.a);
    })().then(
      (v) => this.#post({ rpc: 'res', id, v }),
      (err: unknown) => this.#post({ rpc: 'err', id, e: toWire(err) }),
    );
  }

  #post(w: Wire): void {
    try {
      this.#end.postMessage(w);
    } catch (err) {
      // A result that does not clone: its caller still hears of it.
      if (w.rpc === 'res') this.#end.postMessage({ rpc: 'err', id: w.id, e: toWire(err) } satisfies Wire);
    }
  }
}

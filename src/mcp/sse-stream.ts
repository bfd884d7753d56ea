/**
 * A 2026-07-28 request answered on its own SSE stream (a tools/call with a progress token,
 * subscriptions/listen): its notifications as they come, then its response, then the end.
 */
import type { CallHeaders } from '../core/call.js';
import type { HttpAnswer, Reply } from './answers.js';
import type { Emit } from './wire.js';
import { joinHeaders } from '../lib/join-headers.js';

/** A streamed call's limit headers, known once it is admitted or refused (then `admitted` is told). */
export interface HeaderBox {
  headers?: CallHeaders;
  admitted?: () => void;
}

const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' };
const encoder = new TextEncoder();

/**
 * Starts `run` with the stream's emitter, the signal aborted when the client closes the stream,
 * and the box its call's limit headers land in. The answer's headers carry those: they wait for
 * the limiter's answer when `limited` (the limiter speaks for the caller) and the call did not
 * report them at once — the embedded limiter answers synchronously, the shared (Redis) one a
 * round trip later.
 */
export function streamAnswer(run: (emit: Emit, signal: AbortSignal, box: HeaderBox) => Reply | Promise<Reply>, limited: boolean): HttpAnswer | Promise<HttpAnswer> {
  const abort = new AbortController();
  let ctrl!: ReadableStreamDefaultController<Uint8Array>;
  let open = true;
  const body = new ReadableStream<Uint8Array>({
    start: (c) => void (ctrl = c),
    cancel: () => {
      open = false;
      abort.abort(new Error('The client closed the stream'));
    },
  });
  const emit: Emit = (m) => {
    if (open) ctrl.enqueue(encoder.encode(`event: message\ndata: ${m}\n\n`));
  };
  const box: HeaderBox = {};
  const ran = run(emit, abort.signal, box);
  void Promise.resolve(ran).then(
    (r) => {
      emit(String(r.body));
      if (open) ctrl.close();
    },
    () => {
      if (open) ctrl.close();
    },
  );
  const answer = (): HttpAnswer => ({ kind: 'stream', status: 200, headers: box.headers ? joinHeaders(SSE_HEADERS, box.headers) : SSE_HEADERS, body });
  if (box.headers !== undefined || !(ran instanceof Promise) || !limited) return answer();
  // Admission pending: every admission or refusal reports headers; a call that fails without
  // any (the limiter unreachable) has ended, and the stream already holds its answer.
  return new Promise<HttpAnswer>((resolve) => {
    const done = () => resolve(answer());
    box.admitted = done;
    ran.then(done, done);
  });
}

import type { ServerResponse } from 'node:http';

/** Where a response keeps what is to run once it is sent. */
const AFTER = Symbol('after the answer');
type Answered = ServerResponse & { [AFTER]?: (() => void)[] };

/**
 * Runs `then` once the response has been handed to the connection (its 'finish'). However many
 * parts of the edge ask (the log line, the metrics, the fault budget), a response gets one
 * listener: each `once` would cost a wrapper, a bound function and a longer listener list on
 * every request.
 */
export function whenAnswered(res: ServerResponse, then: () => void): void {
  const answered = res as Answered;
  const after = answered[AFTER];
  if (after) {
    after.push(then);
    return;
  }
  const list = [then];
  answered[AFTER] = list;
  res.once('finish', () => {
    for (const run of list) run();
  });
}

/**
 * Reads an HTTP body (a request's or a response's) keeping at most `max` bytes: a peer that sends more is cut
 * off (the stream cancelled), never held in memory. Used by the answer service for answers and by
 * `hallpass answer` for an agent's lists.
 */

import { concatBytes } from "../util/bytes.ts";

/** The body's bytes, or null when it is longer than `max` (the stream is then cancelled). */
export async function readAtMost(
  body: ReadableStream<Uint8Array> | null,
  max: number,
): Promise<Uint8Array | null> {
  if (!body) return new Uint8Array();
  const reader = body.getReader();
  const parts: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > max) {
      await reader.cancel().catch(() => {});
      return null;
    }
    parts.push(value);
  }
  return concatBytes(parts, total);
}

/** `parts` one after the other (`total`: their length together); a single part is returned as it is. */
export function concatBytes<B extends ArrayBufferLike>(
  parts: readonly Uint8Array<B>[],
  total: number,
): Uint8Array<B | ArrayBuffer> {
  if (parts.length === 1) return parts[0];
  const all = new Uint8Array(total);
  let off = 0;
  for (const p of parts) {
    all.set(p, off);
    off += p.length;
  }
  return all;
}

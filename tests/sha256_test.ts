/** lib/util/sha256.ts against node:crypto: every length around the block and padding edges, and split updates. */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { Sha256 } from "../lib/util/sha256.ts";

Deno.test("Sha256 equals node:crypto's sha256 for lengths 0..300, 64 KiB + 3, and any split", () => {
  const data = new Uint8Array(65539);
  for (let i = 0; i < data.length; i++) data[i] = (i * 131 + (i >> 8)) & 0xff;
  const lengths = [...Array(301).keys(), 1000, 4096, 65539];
  for (const n of lengths) {
    const d = data.subarray(0, n);
    const want = createHash("sha256").update(d).digest("hex");
    assert.equal(new Sha256().update(d).hex(), want, `length ${n}`);
    const cut = Math.floor(n / 3);
    assert.equal(
      new Sha256().update(d.subarray(0, cut)).update(d.subarray(cut, cut + 1)).update(d.subarray(cut + 1))
        .hex(),
      want,
      `length ${n} in three parts`,
    );
  }
  assert.equal(
    new Sha256().update(new TextEncoder().encode("abc")).hex(),
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
  );
});

/**
 * The C pty relay (helper/relay/relay.c, ffi/relay.ts): it may only copy what the output filter would pass
 * unchanged (and leave the filter as it was), its screen-model hint agrees with the definition, and over a real
 * pty pair it copies every byte in order, hands the rest to JavaScript unwritten, and returns when woken.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { probe, test } from "./helpers/skip.ts";
import { Relay } from "../ffi/relay.ts";
import { OutputFilter } from "../lib/ui/output_filter.ts";
import {
  closeFd,
  getTermios,
  makeRaw,
  openPty,
  openSlave,
  readableWithin,
  readMasterNow,
  setNonBlocking,
  setTermios,
  writeAll,
} from "../ffi/pty.ts";

const LIB = new URL("../build/libhallpass-relay.so", import.meta.url).pathname;
const built = () =>
  probe("relay library", () => {
    try {
      Deno.statSync(LIB);
      return undefined;
    } catch {
      return "build/libhallpass-relay.so is not built (make)";
    }
  });

/** A pty pair in raw mode: [master, slave]. */
function rawPty(): [number, number] {
  const { master, slavePath } = openPty();
  const slave = openSlave(slavePath);
  setTermios(slave, makeRaw(getTermios(slave)));
  setNonBlocking(slave);
  return [master, slave];
}

/** A relay whose terminal is the slave of a second raw pty (read back through its master). */
function relayPair(): { relay: Relay; out: number; outSlave: number } {
  const [out, outSlave] = rawPty();
  const relay = Relay.open(LIB, outSlave);
  assert(relay, "relay opens on a terminal");
  return { relay, out, outSlave };
}

let xs = 88172645;
function rx(n: number): number {
  xs ^= xs << 13;
  xs ^= xs >>> 17;
  xs ^= xs << 5;
  return (xs >>> 0) % n;
}

const ALPHABET = [
  0x1b,
  0x5b,
  0x5d,
  0x50,
  0x3f,
  0xc2,
  0x9d,
  0x90,
  0x9c,
  0x07,
  0x5c,
  0x31,
  0x35,
  0x32,
  0x3b,
  0x6d,
  0x68,
  0x41,
];

test({
  name: "relay: what it calls plain, the output filter passes unchanged and stays between sequences",
  ignore: built(),
  fn: () => {
    const { relay, out, outSlave } = relayPair();
    let plain = 0;
    for (let i = 0; i < 20000; i++) {
      const bytes = new Uint8Array(1 + rx(12)).map(() =>
        rx(3) ? ALPHABET[rx(ALPHABET.length)] : 0x61 + rx(26)
      );
      if (!relay.plain(bytes)) continue;
      plain++;
      const f = new OutputFilter();
      assertEquals(f.filter(bytes), bytes, `passed unchanged: ${[...bytes]}`);
      assert(f.idle, `filter between sequences after ${[...bytes]}`);
      assertEquals([f.extraMouseModes(), f.palette()], ["", ""]);
    }
    assert(plain > 1000, `enough plain samples (${plain})`);
    const no = (s: string) => assert(!relay.plain(new TextEncoder().encode(s)), JSON.stringify(s));
    no("\x1b]52;c;eA==\x07");
    no("\x1bPtmux;");
    no("\u009d52;c;?\u009c");
    no("\u0090+p");
    no("\x1b[?1005h");
    no("x\x1b");
    no("x\x1b[");
    assert(!relay.plain(Uint8Array.of(0x61, 0xc2)), "ends in C2");
    assert(relay.plain(new TextEncoder().encode("\x1b[31mred\x1b[0m é 日本\r\n")));
    relay.close();
    closeFd(out);
    closeFd(outSlave);
  },
});

test({
  name: "relay: the screen model's hint (clean) is after the last control other than LF, CR, TAB, BS or C1",
  ignore: built(),
  fn: () => {
    const { relay, out, outSlave } = relayPair();
    const ref = (b: Uint8Array) => {
      let c = 0;
      for (let i = 0; i < b.length; i++) {
        const x = b[i];
        if (x < 0x20 && x !== 10 && x !== 13 && x !== 9 && x !== 8) c = i + 1;
        else if (x >= 0x80 && x <= 0x9f && i > 0 && b[i - 1] === 0xc2) c = i + 1;
      }
      return c;
    };
    const pool = [0x0a, 0x0d, 0x09, 0x08, 0x1b, 0x07, 0x00, 0x7f, 0xc2, 0x85, 0x9b, 0x20, 0x61, 0xe2];
    for (let i = 0; i < 5000; i++) {
      const b = new Uint8Array(rx(40)).map(() => pool[rx(pool.length)]);
      assertEquals(relay.cleanFrom(b), ref(b), `${[...b]}`);
    }
    // Long pieces, mostly text (the scan goes 16 bytes at a time there): a control or C1 anywhere, also across
    // a 16-byte boundary (C2 in one block, its second byte in the next).
    for (let i = 0; i < 5000; i++) {
      const sparse = 1 + rx(200);
      const b = new Uint8Array(rx(400)).map(() => rx(sparse) ? 0x30 + rx(10) : pool[rx(pool.length)]);
      assertEquals(relay.cleanFrom(b), ref(b), `${[...b]}`);
    }
    relay.close();
    closeFd(out);
    closeFd(outSlave);
  },
});

/** Everything the second pty's master holds now and within `ms` of quiet. */
function drain(fd: number, ms = 200): Uint8Array {
  const parts: number[] = [];
  while (readableWithin(fd, ms)) for (const b of readMasterNow(fd)) parts.push(b);
  return Uint8Array.from(parts);
}

test({
  name:
    "relay over real ptys: every plain byte copied in order, a string for the filter handed back unwritten",
  ignore: built(),
  fn: async () => {
    const { relay, out, outSlave } = relayPair();
    const [master, slave] = rawPty();
    const enc = new TextEncoder();
    let text = "";
    for (let i = 0; i < 20000; i++) text += `line ${i} \x1b[3${i % 8}mcolour\x1b[0m é\r\n`;
    const data = enc.encode(text);
    const osc = enc.encode("\x1b]52;c;cHduZWQ=\x07after");
    // The writer: the program's side of the pty.
    const writer = (async () => {
      for (let o = 0; o < data.length; o += 3000) assert(await writeAll(slave, data.subarray(o, o + 3000)));
    })();
    const got: number[] = [];
    let readerDone = false;
    const reader = (async () => {
      // The terminal's side: read what the relay wrote, as it comes.
      while (!readerDone || readableWithin(out, 0)) {
        const chunk = readMasterNow(out);
        for (const b of chunk) got.push(b);
        if (!chunk.length) await new Promise((r) => setTimeout(r, 5));
      }
    })();
    const copied: number[] = [];
    const buf = new Uint8Array(1 << 16);
    // Rounds until everything is copied: a full buffer returns ("full"), a wake every 300 ms ("woken").
    let rounds = 0;
    while (copied.length < data.length) {
      const wake = setTimeout(() => relay.wake(), 300);
      const r = await relay.run(master, buf);
      clearTimeout(wake);
      rounds++;
      assert(["full", "woken", "handoff"].includes(r.state), r.state);
      for (const b of buf.subarray(0, r.used)) copied.push(b);
      if (r.written < r.used) assert(await writeAll(outSlave, buf.slice(r.written, r.used)));
      if (r.state === "handoff") {
        // A read that ended inside a sequence (ESC, ESC [): the pump gives it to the filter; here it goes on as is.
        const piece = buf.slice(r.handoff[0], r.handoff[0] + r.handoff[1]);
        for (const b of piece) copied.push(b);
        assert(await writeAll(outSlave, piece));
      }
    }
    await writer;
    while (got.length < data.length) await new Promise((r) => setTimeout(r, 10));
    readerDone = true;
    await reader;
    assertEquals(copied.length, data.length);
    assert(Uint8Array.from(copied).every((b, i) => b === data[i]), "copied in order, unchanged");
    assert(
      Uint8Array.from(got).every((b, i) => b === data[i]) && got.length === data.length,
      "written in order",
    );
    assert(rounds > 1, "the buffer filled and the relay returned (full)");
    // A string the filter must judge: returned, not written.
    assert(await writeAll(slave, osc));
    await new Promise((r) => setTimeout(r, 50));
    const r = await relay.run(master, buf);
    assertEquals(r.state, "handoff");
    assertEquals(buf.subarray(r.handoff[0], r.handoff[0] + r.handoff[1]), osc);
    assertEquals(r.used, 0);
    assertEquals(drain(out, 100).length, 0, "nothing of it reached the terminal");
    // Woken with nothing to copy: returns at once.
    relay.wake();
    assertEquals((await relay.run(master, buf)).state, "woken");
    relay.close();
    for (const fd of [master, slave, out, outSlave]) closeFd(fd);
  },
});

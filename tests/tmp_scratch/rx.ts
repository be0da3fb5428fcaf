let s = "";
for (let i = 1; i <= 2000000; i++) s += i + "\r\n";
const bytes = new TextEncoder().encode(s);
const dec = new TextDecoder("latin1");
// deno-lint-ignore no-control-regex
const re = /[\x00-\x07\x0b\x0c\x0e-\x1a\x1c-\x1f]|\x1b(?!\[[0-9;:]*m)/g;
let t0 = performance.now();
let n = 0;
for (let o = 0; o < bytes.length; o += 1 << 20) {
  const str = dec.decode(bytes.subarray(o, o + (1 << 20)));
  re.lastIndex = 0;
  let m; let last = -1;
  while ((m = re.exec(str)) !== null) last = m.index;
  n += last;
  let lf = str.length; for (let k = 0; k < 1031; k++) lf = str.lastIndexOf("\n", lf - 1);
}
console.log("decode+regex", performance.now() - t0, n);
t0 = performance.now();
for (let o = 0; o < bytes.length; o += 1 << 20) { const b = bytes.subarray(o, o + (1 << 20)); let x = 0; for (let i = 0; i < b.length; i++) { const c = b[i]; if (c < 0x20 && c !== 10 && c !== 13) x = i; } n += x; }
console.log("loop", performance.now() - t0, n);

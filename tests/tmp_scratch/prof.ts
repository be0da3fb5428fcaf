import { findSkip } from "../../lib/ui/mirror_skip.ts";
import { OutputFilter } from "../../lib/ui/output_filter.ts";
let s = "";
for (let i = 1; i <= 2000000; i++) s += i + "\r\n";
const bytes = new TextEncoder().encode(s);
let t0 = performance.now();
for (let o = 0; o < bytes.length; o += 1 << 20) findSkip(bytes.subarray(o, o + (1 << 20)), 30, 1000);
console.log("findSkip", performance.now() - t0);
const f = new OutputFilter();
t0 = performance.now();
for (let o = 0; o < bytes.length; o += 4096) f.filter(bytes.subarray(o, o + 4096));
console.log("filter", performance.now() - t0);
t0 = performance.now();
for (let o = 0; o < bytes.length; o += 4096) { const b = new Uint8Array(65536); b.slice(0, 4096); }
console.log("alloc", performance.now() - t0);

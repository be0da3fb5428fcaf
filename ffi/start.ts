/**
 * helper/start/start.c through FFI: the read side of the Landlock ruleset in one call (the carve of
 * lib/floor/landlock_carve.ts for the protected paths, its rules added to the ruleset as it makes them), instead
 * of hundreds of FFI calls and Deno ops and a pass of JavaScript per path. Used when the library was built;
 * lib/floor/read_floor.ts readFloor stays the reference, and tests/start_lib_test.ts compares the two.
 *
 * The symbol is nonblocking: the call runs on one of Deno's blocking threads while the start-up goes on (the
 * write side of the ruleset, the filter), and a nonblocking symbol costs no fast-call trampoline to open (a
 * blocking one with buffer parameters ~0.3 ms each). errno never crosses threads: the call returns it.
 */
import { SysError } from "./errors.ts";

const SYMBOLS = {
  // long hp_read_floor(const uint8_t *in, uint64_t inlen, uint8_t *out, uint64_t outlen)
  hp_read_floor: { parameters: ["buffer", "u64", "buffer", "u64"], result: "i64", nonblocking: true },
} as const satisfies Deno.ForeignLibraryInterface;

const enc = new TextEncoder();
const dec = new TextDecoder();

/** What hp_read_floor answers (see helper/start/start.c). */
export interface RawReadFloor {
  /** The index of each protected path not kept (a builtin one inside the project). */
  notKept: number[];
  listed: number;
  /** How many rules `rules` holds (u64 access, u8 1 file / 2 directory, path, NUL): the ruleset has them. */
  ruleCount: number;
  rules: Uint8Array<ArrayBuffer>;
  /**
   * The carved directories, each with the names it held and their inode numbers (non-directories): made when
   * asked (hundreds of names as root, not needed before the command starts).
   */
  carved: { path: string; names: () => Map<string, number | undefined> }[];
  hardLinked: string[];
  dropped: string[];
  /**
   * Each path (its index: the protected paths, then the readable ones) whose canonical form
   * (lib/floor/carve_fs.ts resolveExisting) differs.
   */
  real: { index: number; path: string }[];
}

/** The packed rules as objects (tests, and the path of a rule the kernel refused). */
export function unpackRules(rules: Uint8Array): { path: string; access: bigint; dir: boolean }[] {
  const dv = new DataView(rules.buffer, rules.byteOffset, rules.byteLength);
  const out = [];
  for (let o = 0; o < rules.length;) {
    const access = dv.getBigUint64(o, true);
    const dir = rules[o + 8] === 2;
    const end = rules.indexOf(0, o + 9);
    out.push({ path: dec.decode(rules.subarray(o + 9, end)), access, dir });
    o = end + 1;
  }
  return out;
}

export class StartLib {
  private constructor(readonly lib: Deno.DynamicLibrary<typeof SYMBOLS>["symbols"]) {}

  /** The library at `path`, or null when there is none or it cannot be loaded (the callers then go one by one). */
  static open(path: string | null): StartLib | null {
    if (path === null) return null;
    try {
      return new StartLib(Deno.dlopen(path, SYMBOLS).symbols);
    } catch {
      return null;
    }
  }

  /**
   * The carve of the read side (lib/floor/read_floor.ts readFloor with the given grants: normalised canonical
   * paths, then each of `readable` where it really is), each of its rules added to `ruleset` (-1: none) with
   * `right & handled` as it is made. `protect` and `readable`: plain absolute paths (no "//", "." or "..", no
   * trailing "/"). Resolves to `{ limit: dir }` when more than
   * `maxRules` rules were needed, null when the call failed (the caller carves in TypeScript, into a new
   * ruleset: this one may hold some of the rules); rejects with SysError when the kernel refused a rule.
   * Otherwise the ruleset holds the rules, and it resolves to the function that decodes the rest of the answer
   * (the start-up calls it once the launcher has its configuration).
   */
  async readFloor(
    o: {
      right: bigint;
      fileRights: bigint;
      maxRules: number;
      project: string;
      grants: readonly string[];
      readable: readonly string[];
      ruleset: number;
      handled: bigint;
    },
    protect: readonly { path: string; builtin: boolean }[],
  ): Promise<(() => RawReadFloor) | { limit: string } | null> {
    const project = enc.encode(o.project + "\0");
    const grants = enc.encode(o.grants.map((g) => g + "\0").join(""));
    // Each protected path behind its flag: 1 builtin, 2 yours. start.c refuses a path that is not plain, and
    // input whose strings do not add up (a NUL inside a path): null, and the caller carves in TypeScript.
    const prot = enc.encode(
      protect.map((p) => (p.builtin ? "\x01" : "\x02") + p.path + "\0").join("") +
        o.readable.map((p) => "\x03" + p + "\0").join(""),
    );
    const input = new Uint8Array(40 + project.length + 4 + grants.length + 4 + prot.length);
    const iv = new DataView(input.buffer);
    iv.setBigUint64(0, o.right, true);
    iv.setBigUint64(8, o.fileRights, true);
    iv.setBigUint64(16, BigInt(o.maxRules), true);
    iv.setBigUint64(24, o.handled, true);
    iv.setBigInt64(32, BigInt(o.ruleset), true);
    let at = 40;
    input.set(project, at);
    at += project.length;
    iv.setUint32(at, o.grants.length, true);
    input.set(grants, at + 4);
    at += 4 + grants.length;
    iv.setUint32(at, protect.length + o.readable.length, true);
    input.set(prot, at + 4);
    // Too small (-1): called again with more room (it adds the same rules again; Landlock merges them).
    for (let size = 256 * 1024; size <= 256 * 1024 * 1024; size *= 4) {
      const out = new Uint8Array(size);
      const n = Number(await this.lib.hp_read_floor(input, BigInt(input.length), out, BigInt(size)));
      if (n === -1) continue;
      if (n === -2) return { limit: dec.decode(out.subarray(0, out.indexOf(0))) };
      if (n === -4) {
        const path = dec.decode(out.subarray(4, out.indexOf(0, 4)));
        throw new SysError(`landlock_add_rule(${path})`, new DataView(out.buffer).getUint32(0, true));
      }
      if (n < 0) return null;
      return () => decodeFloor(out.subarray(0, n));
    }
    return null;
  }
}

function decodeFloor(out: Uint8Array<ArrayBuffer>): RawReadFloor {
  const dv = new DataView(out.buffer, out.byteOffset, out.byteLength);
  let o = 0;
  const u32 = () => {
    o += 4;
    return dv.getUint32(o - 4, true);
  };
  const notKept: number[] = [];
  for (let k = u32(); k > 0; k--) notKept.push(u32());
  const listed = u32();
  const ruleCount = u32();
  const bytes = Number(dv.getBigUint64(o, true));
  o += 8;
  const rules = out.slice(o, o + bytes);
  o += bytes;
  // The binary part first (counts, inode numbers: read when the names are asked), then every string, decoded
  // at once.
  const entries: { at: number; count: number }[] = [];
  for (let k = u32(); k > 0; k--) {
    const count = u32();
    entries.push({ at: o, count });
    o += 9 * count;
  }
  const nHard = u32();
  const nDropped = u32();
  const aliasOf: number[] = [];
  for (let k = u32(); k > 0; k--) aliasOf.push(u32());
  const strBytes = Number(dv.getBigUint64(o, true));
  o += 8;
  const strs = dec.decode(out.subarray(o, o + strBytes)).split("\0");
  let s = 0;
  const carved = entries.map(({ at, count }) => {
    const path = strs[s];
    const first = s + 1;
    s += 1 + count;
    const names = () => {
      const m = new Map<string, number | undefined>();
      for (let e = 0; e < count; e++) {
        const b = at + 9 * e;
        m.set(strs[first + e], out[b] === 1 ? Number(dv.getBigUint64(b + 1, true)) : undefined);
      }
      return m;
    };
    return { path, names };
  });
  const hardLinked = strs.slice(s, s + nHard);
  const dropped = strs.slice(s + nHard, s + nHard + nDropped);
  s += nHard + nDropped;
  const real = aliasOf.map((index) => ({ index, path: strs[s++] }));
  return { notKept, listed, ruleCount, rules, carved, hardLinked, dropped, real };
}

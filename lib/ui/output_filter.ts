/**
 * The filter on the program's output before it reaches the user's terminal (pty mode). The terminal is the
 * user's, outside the sandbox; the program may use it as its own screen, but not as a way out:
 *
 * * **OSC 52 (clipboard) never passes**, in either direction: a write would put the program's text in the
 *   clipboard the user next pastes into a shell outside (`echo pwned`), a query (`OSC 52 ; c ; ?`) would make
 *   the terminal send the clipboard's contents to the program. Both are removed whole, also when wrapped in a
 *   tmux passthrough (`ESC P tmux; … ESC \`), in the C1 form, and with leading zeros (`OSC 000052`, which
 *   terminals read as 52). There is no question for it: a clipboard write has no target a person could judge,
 *   and a question per write would be a flood. The terminal-specific ways to the clipboard, the person's files
 *   or commands are removed the same way: iTerm2's OSC 1337, kitty's OSC 5522 and 5113 and its remote control
 *   (`ESC P @kitty-cmd`).
 * * **Palette and default colours (OSC 4, 5, 10–19 and their resets 104, 105, 110–119)** pass (a program's
 *   theme), and are recorded: while the bar is up the terminal's colours are reset to its own defaults, and
 *   after the bar they are set again as the program left them ({@linkcode palette}). A program cannot make the
 *   bar invisible by giving the foreground and background one colour.
 * * Everything else passes unchanged (titles included: a title is shown by the terminal, not run).
 *
 * Mouse encodings xterm.js does not model (1005 UTF-8, 1015 urxvt) are tracked here, for putting them back after
 * the bar ({@linkcode extraMouseModes}).
 *
 * The filter is streaming: a string split across reads is handled as one; only the few bytes that decide what a
 * string is (`ESC ] 52 ;`, `ESC P tmux;`) and a tmux passthrough (bounded) are held until the next read.
 */

const ESC = 0x1b, BEL = 0x07, CAN = 0x18, SUB = 0x1a, C2 = 0xc2;
const MAX_PASSTHROUGH = 1 << 20;
/** The most digits an OSC number may have here (a longer one is removed: it cannot be judged). */
const MAX_OSC_DIGITS = 16;
/**
 * OSC numbers removed whole: 52 (clipboard), and the terminal-specific ways to the clipboard or the person's
 * files: iTerm2's 1337 (`Copy=`, `CopyToClipboard`, `File=` downloads), kitty's 5522 (clipboard) and 5113 (file
 * transfer).
 */
const DROP_OSC = new Set([52, 1337, 5113, 5522]);
/**
 * DCS strings decided by their start: a tmux passthrough (held and judged); removed: kitty's remote control,
 * xterm's XTSETTCAP (`+p`), and, after up to 64 parameter bytes, DECUDK (`Pc;Pl |`: keys the person presses later
 * would type the program's text into the shell outside) and DECDLD (`… {`: a soft font could draw the bar's text
 * as other letters).
 */
const DCS_HEADS = ["tmux;", "@kitty-cmd", "+p"];
function dcsHeadGrows(body: string): boolean {
  return DCS_HEADS.some((h) => h.startsWith(body)) || /^[0-9;]{0,64}[|{]?$/.test(body);
}
function dcsDropped(body: string): boolean {
  return body === "@kitty-cmd" || body === "+p" || /[|{]$/.test(body) || body.length > 64;
}
/** What a held tmux passthrough must not carry (its ESCs are doubled; C1 forms too). */
// deno-lint-ignore no-control-regex
const PASSTHROUGH_DROP = /(?:\x1b\]|\xc2\x9d)0*(?:52|1337|5113|5522)(?!\d)|(?:\x1bP|\xc2\x90)@kitty-cmd/;

type State =
  | { s: "ground" }
  | { s: "head"; kind: "osc" | "dcs"; bytes: number[] } // deciding what the string is
  | { s: "pass"; record: number[] | null } // passing a string through (maybe recording it)
  | { s: "drop" } // removing a string
  | { s: "hold"; bytes: number[] }; // a tmux passthrough, held until its end

/** Is OSC number `n` a palette or default-colour change? */
function paletteOsc(n: number): boolean {
  return n === 4 || n === 5 || (n >= 10 && n <= 19) || n === 104 || n === 105 || (n >= 110 && n <= 119);
}

/** Bytes as a string of the same code units. */
function latin1(bytes: number[]): string {
  let s = "";
  for (let i = 0; i < bytes.length; i += 4096) s += String.fromCharCode(...bytes.slice(i, i + 4096));
  return s;
}

function concat(parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0];
  const res = new Uint8Array(parts.reduce((s, p) => s + p.length, 0));
  let o = 0;
  for (const p of parts) {
    res.set(p, o);
    o += p.length;
  }
  return res;
}

export class OutputFilter {
  #st: State = { s: "ground" };
  /** Bytes at the end of the last chunk that decide what follows (ESC, or the C2 of a C1): read again first. */
  #carry: Uint8Array | null = null;
  /** Palette strings the program set, in order (a reset drops the sets it resets). */
  #palette: string[] = [];
  #utf8Mouse = false;
  #urxvtMouse = false;

  /** Between sequences: nothing carried, no string begun (what relay.c passes keeps it so). */
  get idle(): boolean {
    return this.#st.s === "ground" && this.#carry === null;
  }

  /** Filters one chunk of the program's output. */
  filter(chunk: Uint8Array): Uint8Array {
    const data = this.#carry ? concat([this.#carry, chunk]) : chunk;
    this.#carry = null;
    const parts: Uint8Array[] = [];
    const n = data.length;
    let i = 0;
    while (i < n) {
      const st = this.#st;
      if (st.s === "ground") {
        const e = data.indexOf(ESC, i);
        const c1 = data.indexOf(C2, i);
        const j = e < 0 ? c1 : c1 < 0 ? e : Math.min(e, c1);
        if (j < 0) {
          parts.push(data.subarray(i));
          break;
        }
        if (j + 1 >= n) { // what it starts is decided by the next byte
          parts.push(data.subarray(i, j));
          this.#carry = data.slice(j);
          break;
        }
        const c = data[j + 1];
        const osc = data[j] === ESC ? c === 0x5d : c === 0x9d;
        const dcs = data[j] === ESC ? c === 0x50 : c === 0x90;
        if (osc || dcs) {
          parts.push(data.subarray(i, j));
          this.#st = { s: "head", kind: osc ? "osc" : "dcs", bytes: [data[j], c] };
          i = j + 2;
          continue;
        }
        if (data[j] === ESC && c === 0x5b && j + 2 < n && data[j + 2] === 0x3f) {
          this.#privateModes(data, j + 3);
        }
        parts.push(data.subarray(i, j + 1));
        i = j + 1;
        continue;
      }
      if (st.s === "head") {
        const body = String.fromCharCode(...st.bytes.slice(2));
        const b = data[i];
        if (
          st.kind === "osc"
            ? b >= 0x30 && b <= 0x39 && body.length < MAX_OSC_DIGITS
            : !/[|{]$/.test(body) && dcsHeadGrows(body + String.fromCharCode(b))
        ) {
          st.bytes.push(b);
          i++;
          continue;
        }
        // Decided (the byte at i is not part of the head; the string state reads it).
        if (st.kind === "osc") {
          // A terminal reads the number as digits (leading zeros too: `000052` is 52); more digits than
          // MAX_OSC_DIGITS cannot be judged and the string is removed.
          const num = body === "" ? -1 : Number(body);
          if (DROP_OSC.has(num) || body.length >= MAX_OSC_DIGITS) this.#st = { s: "drop" };
          else {
            parts.push(Uint8Array.from(st.bytes));
            this.#st = { s: "pass", record: paletteOsc(num) ? [...st.bytes] : null };
          }
        } else if (body === "tmux;") this.#st = { s: "hold", bytes: [...st.bytes] };
        else if (dcsDropped(body)) this.#st = { s: "drop" };
        else {
          parts.push(Uint8Array.from(st.bytes));
          this.#st = { s: "pass", record: null };
        }
        continue;
      }
      // Inside a string: up to BEL, ESC \, C1 ST, CAN, SUB; or ESC + anything else (a terminal ends it there
      // too, and that ESC starts a new sequence, read again in ground state).
      let end = -1; // index after the string
      let next = -1; // where reading goes on
      let j = i;
      for (; j < n; j++) {
        const b = data[j];
        if (b === BEL || b === CAN || b === SUB) {
          end = next = j + 1;
          break;
        }
        if (b === ESC || b === C2) {
          if (j + 1 >= n) break; // decided by the next read: carried
          const c = data[j + 1];
          if (b === C2 && (c === 0x9d || c === 0x90)) { // a C1 OSC or DCS: like ESC, it starts a new string
            end = next = j;
            break;
          }
          if (b === ESC && c === 0x5c) {
            end = next = j + 2;
            break;
          }
          if (b === C2 && c === 0x9c) {
            end = next = j + 2;
            break;
          }
          if (b === ESC) {
            end = next = j;
            break;
          }
        }
      }
      const stop = end >= 0 ? end : j;
      const piece = data.subarray(i, stop);
      if (st.s === "pass") {
        parts.push(piece);
        if (st.record) { for (const x of piece) st.record.push(x); }
      } else if (st.s === "hold") {
        for (const x of piece) st.bytes.push(x);
        if (st.bytes.length > MAX_PASSTHROUGH) this.#st = { s: "drop" }; // too big to judge: removed
      }
      if (end < 0) {
        if (j < n) this.#carry = data.slice(j);
        break;
      }
      const done = this.#st;
      this.#st = { s: "ground" };
      if (done.s === "pass" && done.record) this.#record(latin1(done.record));
      if (done.s === "hold") {
        // A passthrough is the program talking to the outer terminal: removed when it carries OSC 52.
        const text = latin1(done.bytes);
        if (!PASSTHROUGH_DROP.test(text)) parts.push(Uint8Array.from(done.bytes));
      }
      i = next;
    }
    return concat(parts.length ? parts : [new Uint8Array(0)]);
  }

  /** What is held back at the end (a lone ESC, an unfinished string's decided part): for the last write. */
  flush(): Uint8Array {
    const c = this.#carry ?? new Uint8Array(0);
    this.#carry = null;
    const st = this.#st;
    this.#st = { s: "ground" };
    if (st.s === "pass") return c;
    const body = st.s === "head" ? String.fromCharCode(...st.bytes.slice(2)) : "";
    if (st.s === "head" && !(st.kind === "osc" && DROP_OSC.has(Number(body)))) {
      return concat([Uint8Array.from(st.bytes), c]);
    }
    return new Uint8Array(0);
  }

  #record(s: string): void {
    // deno-lint-ignore no-control-regex
    const body = s.replace(/^(\x1b\]|\xc2\x9d)/, "").replace(/(\x07|\x1b\\|\xc2\x9c|\x18|\x1a)$/, "");
    const num = Number(/^\d+/.exec(body)?.[0] ?? -1);
    if ((num === 104 || num === 105) && !/;./.test(body)) {
      this.#palette = this.#palette.filter((p) => !p.startsWith(`${num - 100};`));
    }
    if (num >= 110 && num <= 119) this.#palette = this.#palette.filter((p) => !p.startsWith(`${num - 100};`));
    this.#palette.push(body);
    if (this.#palette.length > 512) this.#palette = this.#palette.slice(-512);
  }

  /** Tracks `ESC [ ? Pm h/l` for 1005 and 1015 (a sequence split across reads is missed: only for display). */
  #privateModes(b: Uint8Array, p: number): void {
    let j = p;
    let params = "";
    while (j < b.length && b[j] >= 0x30 && b[j] <= 0x3f) params += String.fromCharCode(b[j++]);
    const f = b[j];
    if (f !== 0x68 && f !== 0x6c) return;
    for (const m of params.split(";")) {
      if (m === "1005") this.#utf8Mouse = f === 0x68;
      if (m === "1015") this.#urxvtMouse = f === 0x68;
    }
  }

  /** The sequence that sets the palette and default colours again as the program left them ("" if untouched). */
  palette(): string {
    return this.#palette.map((p) => `\x1b]${p}\x1b\\`).join("");
  }

  /** Resets, to the terminal's defaults, each colour the program changed (sent while the bar is up). */
  paletteReset(): string {
    let out = "";
    for (const p of this.#palette) {
      const parts = p.split(";");
      const num = Number(parts[0]);
      if (num === 4 || num === 5) {
        for (let k = 1; k < parts.length; k += 2) {
          if (/^\d+$/.test(parts[k])) out += `\x1b]${num + 100};${parts[k]}\x1b\\`;
        }
      } else if (num >= 10 && num <= 19) {
        // OSC 10;a;b sets 10 and 11 (each further parameter the next colour).
        for (let k = 1; k < parts.length && num + k - 1 <= 19; k++) out += `\x1b]${num + k - 1 + 100}\x1b\\`;
      }
    }
    return out;
  }

  /** True when the program changed any colour (the bar then resets them while it is up). */
  get paletteChanged(): boolean {
    return this.#palette.length > 0;
  }

  /** `ESC [ ? 1005 h` / `1015 h` when the program turned those on (xterm.js does not model them). */
  extraMouseModes(): string {
    return (this.#utf8Mouse ? "\x1b[?1005h" : "") + (this.#urxvtMouse ? "\x1b[?1015h" : "");
  }
}

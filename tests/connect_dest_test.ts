import assert from "node:assert/strict";
import {
  canonicalAddr,
  type ConnectTarget,
  destCovers,
  destSpecificity,
  formatDest,
  formatTarget,
  parseConnectDest,
  parseConnectTarget,
  suggestDestScopes,
} from "../lib/policy/connect_dest.ts";
import { UsageError } from "../lib/types.ts";

const inet = (proto: "tcp" | "udp", addr: string, port: number): ConnectTarget => ({
  family: addr.includes(":") ? "inet6" : "inet",
  proto,
  addr,
  port,
});
const tcp = (addr: string, port: number) => inet("tcp", addr, port);
const udp = (addr: string, port: number) => inet("udp", addr, port);
const upath = (path: string): ConnectTarget => ({ family: "unix", path });
const uabs = (abstract: string): ConnectTarget => ({ family: "unix", abstract });

Deno.test("parseConnectDest: canonical forms", async (t) => {
  const cases: [string, string][] = [
    ["*", "*"],
    ["1.2.3.4", "1.2.3.4"],
    ["tcp:1.2.3.4", "tcp:1.2.3.4"],
    ["udp:1.2.3.4:53", "udp:1.2.3.4:53"],
    ["1.2.3.4:80-90", "1.2.3.4:80-90"],
    ["1.2.3.4:80-80", "1.2.3.4:80"],
    ["1.2.3.4:080", "1.2.3.4:80"],
    ["10.1.2.3/8", "10.0.0.0/8"],
    ["tcp:10.1.2.3/8:80-90", "tcp:10.0.0.0/8:80-90"],
    ["0.0.0.0/0:25", "0.0.0.0/0:25"],
    ["1.2.3.4/32", "1.2.3.4"],
    ["255.255.255.255:65535", "255.255.255.255:65535"],
    ["[::1]", "[::1]"],
    ["[::1]:8080", "[::1]:8080"],
    ["udp:[::1]:53", "udp:[::1]:53"],
    ["[2001:DB8:0:0:0:0:0:1]", "[2001:db8::1]"],
    ["[2001:db8::1]/32:443", "[2001:db8::]/32:443"],
    ["[2001:db8:0:0:1:0:0:1]", "[2001:db8::1:0:0:1]"],
    ["[1:2:3:4:5:6:7:8]", "[1:2:3:4:5:6:7:8]"],
    ["[::]/0", "[::]/0"],
    ["[::]", "[::]"],
    ["[fe80::]/10:22", "[fe80::]/10:22"],
    ["[::ffff:127.0.0.1]", "127.0.0.1"],
    ["[::ffff:7f00:1]:80", "127.0.0.1:80"],
    ["[::ffff:10.0.0.0]/104", "10.0.0.0/8"],
    ["[::ffff:0:0]/96", "0.0.0.0/0"],
    ["[::ffff:0:0]/95", "[::fffe:0:0]/95"],
    ["[64:ff9b::1.2.3.4]", "[64:ff9b::102:304]"],
    ["tcp:*", "tcp:*"],
    ["*:443", "*:443"],
    ["udp:*:53", "udp:*:53"],
    ["unix:/run/x.sock", "unix:/run/x.sock"],
    ["unix:/run//x/../y.sock", "unix:/run/y.sock"],
    ["unix:/run/user/**", "unix:/run/user/**"],
    ["unix:@name", "unix:@name"],
    ["unix:@prefix*", "unix:@prefix*"],
    ["unix:@*", "unix:@*"],
    ["unix:@/tmp/.X11-unix/X0", "unix:@/tmp/.X11-unix/X0"],
  ];
  for (const [text, want] of cases) {
    await t.step(`${text} → ${want}`, () => {
      const d = parseConnectDest(text);
      assert.equal(formatDest(d), want);
      assert.equal(formatDest(parseConnectDest(formatDest(d))), want, "canonical form parses to itself");
    });
  }
});

Deno.test("parseConnectDest: errors", async (t) => {
  const cases: [string, string][] = [
    ["example.com", "host names are not allowed: use an address (example.com)"],
    ["tcp:example.com:443", "host names are not allowed: use an address (example.com)"],
    ["localhost", "host names are not allowed: use an address (localhost)"],
    ["udp:my-host:53", "host names are not allowed: use an address (my-host)"],
    ["", "empty connect destination"],
    ["tcp:", 'bad connect destination "tcp:": missing address'],
    ["::1", 'bad connect destination "::1": IPv6 addresses go in brackets: [::1]'],
    [
      "2001:db8::1/64",
      'bad connect destination "2001:db8::1/64": IPv6 addresses go in brackets: [2001:db8::1]',
    ],
    [
      "127.1",
      'bad connect destination "127.1": "127.1" is not an IPv4 address (four decimal parts 0-255, no leading zeros)',
    ],
    [
      "010.0.0.1",
      'bad connect destination "010.0.0.1": "010.0.0.1" is not an IPv4 address (four decimal parts 0-255, no leading zeros)',
    ],
    [
      "256.0.0.1",
      'bad connect destination "256.0.0.1": "256.0.0.1" is not an IPv4 address (four decimal parts 0-255, no leading zeros)',
    ],
    [
      "0x7f.0.0.1",
      'bad connect destination "0x7f.0.0.1": "0x7f.0.0.1" is not an IPv4 address (four decimal parts 0-255, no leading zeros)',
    ],
    ["1.2.3.4:0", 'bad connect destination "1.2.3.4:0": port 0 is out of range: ports are 1-65535'],
    [
      "1.2.3.4:65536",
      'bad connect destination "1.2.3.4:65536": port 65536 is out of range: ports are 1-65535',
    ],
    [
      "1.2.3.4:1-70000",
      'bad connect destination "1.2.3.4:1-70000": port 70000 is out of range: ports are 1-65535',
    ],
    ["1.2.3.4:90-80", 'bad connect destination "1.2.3.4:90-80": port range 90-80 is backwards'],
    ["1.2.3.4:", 'bad connect destination "1.2.3.4:": bad port "": expected PORT or PORT-PORT'],
    ["1.2.3.4:http", 'bad connect destination "1.2.3.4:http": bad port "http": expected PORT or PORT-PORT'],
    ["1.2.3.4:-5", 'bad connect destination "1.2.3.4:-5": bad port "-5": expected PORT or PORT-PORT'],
    ["1.2.3.4/33", 'bad connect destination "1.2.3.4/33": prefix length /33 is more than 32'],
    ["[::1]/129", 'bad connect destination "[::1]/129": prefix length /129 is more than 128'],
    ["1.2.3.4/", 'bad connect destination "1.2.3.4/": bad prefix length after "/": expected 0-32'],
    ["1.2.3.4/-1", 'bad connect destination "1.2.3.4/-1": bad prefix length after "/": expected 0-32'],
    ["[::1", 'bad connect destination "[::1": missing "]" after the IPv6 address'],
    ["[::1::2]", 'bad connect destination "[::1::2]": "::1::2" is not an IPv6 address'],
    [
      "[1:2:3:4:5:6:7:8:9]",
      'bad connect destination "[1:2:3:4:5:6:7:8:9]": "1:2:3:4:5:6:7:8:9" is not an IPv6 address',
    ],
    ["[12345::]", 'bad connect destination "[12345::]": "12345::" is not an IPv6 address'],
    ["[:::]", 'bad connect destination "[:::]": ":::" is not an IPv6 address'],
    ["[]", 'bad connect destination "[]": "" is not an IPv6 address'],
    ["[fe80::1%eth0]", 'bad connect destination "[fe80::1%eth0]": IPv6 zone ids (%…) are not allowed'],
    ["[::1]x", 'bad connect destination "[::1]x": unexpected "x" after the address'],
    ["*/8", 'bad connect destination "*/8": "*" takes no /N'],
    [
      "icmp:1.2.3.4",
      'bad connect destination "icmp:1.2.3.4": unknown protocol "icmp": use tcp: or udp: (or unix:)',
    ],
    [
      "sctp:[::1]:80",
      'bad connect destination "sctp:[::1]:80": unknown protocol "sctp": use tcp: or udp: (or unix:)',
    ],
    ["myhost:80", "host names are not allowed: use an address (myhost)"],
    ["tcp:udp:1.2.3.4", "host names are not allowed: use an address (udp)"],
    ["1.2.3.4 ", 'bad connect destination "1.2.3.4 ": contains white space'],
    [
      "unix:",
      'bad connect destination "unix:": unix socket paths must be absolute (unix:/path or unix:@name)',
    ],
    [
      "unix:run/x",
      'bad connect destination "unix:run/x": unix socket paths must be absolute (unix:/path or unix:@name)',
    ],
    ["unix:@", 'bad connect destination "unix:@": empty abstract socket name (unix:@* covers them all)'],
    [
      "unix:@a*b",
      'bad connect destination "unix:@a*b": "*" is only allowed at the end of an abstract socket name',
    ],
    [
      "unix:/run/*.sock",
      'bad connect destination "unix:/run/*.sock": bad path "/run/*.sock": "*" is not allowed (the only pattern is a trailing /**)',
    ],
    ["1.2.3.4\0", 'bad connect destination "1.2.3.4\\u0000": contains a NUL byte'],
  ];
  for (const [text, want] of cases) {
    await t.step(JSON.stringify(text), () => {
      assert.throws(() => parseConnectDest(text), (e: Error) => {
        assert.ok(e instanceof UsageError);
        assert.equal(e.message, want);
        return true;
      });
    });
  }
  await t.step("a huge destination gives a short message", () => {
    assert.throws(() => parseConnectDest("a".repeat(1_000_000)), (e: Error) => e.message.length < 200);
    assert.throws(
      () => parseConnectDest("1.2.3.4:" + "9".repeat(1_000_000)),
      (e: Error) => e.message.length < 200,
    );
  });
});

Deno.test("destCovers", async (t) => {
  const cases: [string, ConnectTarget, boolean][] = [
    ["*", tcp("1.2.3.4", 80), true],
    ["*", tcp("::1", 80), true],
    ["*", upath("/run/x"), true],
    ["*", uabs("x"), true],
    ["tcp:*", tcp("1.2.3.4", 80), true],
    ["tcp:*", tcp("::1", 80), true],
    ["tcp:*", udp("1.2.3.4", 80), false],
    ["tcp:*", upath("/run/x"), false],
    ["*:443", tcp("2001:db8::1", 443), true],
    ["*:443", tcp("2001:db8::1", 444), false],
    ["1.2.3.4", tcp("1.2.3.4", 1), true],
    ["1.2.3.4", udp("1.2.3.4", 65535), true],
    ["1.2.3.4", tcp("1.2.3.5", 80), false],
    ["tcp:1.2.3.4", udp("1.2.3.4", 80), false],
    ["udp:1.2.3.4:53", udp("1.2.3.4", 53), true],
    ["udp:1.2.3.4:53", tcp("1.2.3.4", 53), false],
    // port ranges
    ["1.2.3.4:80-90", tcp("1.2.3.4", 79), false],
    ["1.2.3.4:80-90", tcp("1.2.3.4", 80), true],
    ["1.2.3.4:80-90", tcp("1.2.3.4", 85), true],
    ["1.2.3.4:80-90", tcp("1.2.3.4", 90), true],
    ["1.2.3.4:80-90", tcp("1.2.3.4", 91), false],
    ["1.2.3.4:80", tcp("1.2.3.4", 0), false],
    ["1.2.3.4", tcp("1.2.3.4", 0), true],
    ["1.2.3.4:1-65535", tcp("1.2.3.4", 65535), true],
    // networks
    ["10.0.0.0/8", tcp("10.255.255.255", 1), true],
    ["10.0.0.0/8", tcp("11.0.0.0", 1), false],
    ["10.1.2.3/8", tcp("10.9.9.9", 1), true],
    ["0.0.0.0/0:25", tcp("8.8.8.8", 25), true],
    ["0.0.0.0/0:25", tcp("8.8.8.8", 26), false],
    ["0.0.0.0/0", tcp("::1", 25), false],
    ["192.168.1.128/25", tcp("192.168.1.127", 1), false],
    ["192.168.1.128/25", tcp("192.168.1.200", 1), true],
    ["128.0.0.0/1", tcp("255.0.0.1", 1), true],
    ["128.0.0.0/1", tcp("127.255.255.255", 1), false],
    // IPv6
    ["[::1]", tcp("::1", 80), true],
    ["[::1]", tcp("::2", 80), false],
    ["[::1]", tcp("[::1]", 80), true],
    ["[::1]", tcp("0:0:0:0:0:0:0:1", 80), true],
    ["[::1]", tcp("1.0.0.0", 80), false],
    ["[2001:db8::]/32", tcp("2001:db8:ffff::1", 443), true],
    ["[2001:db8::]/32", tcp("2001:db9::1", 443), false],
    ["[2001:db8::]/33", tcp("2001:db8:8000::1", 443), false],
    ["[2001:db8::]/33", tcp("2001:db8:7fff::1", 443), true],
    ["[fe80::]/10", tcp("febf::1", 22), true],
    ["[fe80::]/10", tcp("fec0::1", 22), false],
    ["[::]/0", tcp("2001:db8::1", 1), true],
    ["[1:2:3:4:5:6:7:8]/127", tcp("1:2:3:4:5:6:7:9", 1), true],
    ["[1:2:3:4:5:6:7:8]/127", tcp("1:2:3:4:5:6:7:a", 1), false],
    // IPv4-mapped IPv6: IPv4 rules cover mapped targets, IPv6 rules never cover IPv4
    ["127.0.0.1", tcp("::ffff:127.0.0.1", 80), true],
    ["127.0.0.1", tcp("::ffff:7f00:1", 80), true],
    ["127.0.0.0/8", tcp("::ffff:127.1.2.3", 80), true],
    ["127.0.0.1", tcp("::ffff:127.0.0.2", 80), false],
    ["127.0.0.1", tcp("::127.0.0.1", 80), false],
    ["[::ffff:127.0.0.1]", tcp("127.0.0.1", 80), true],
    ["[::ffff:127.0.0.1]", tcp("::ffff:127.0.0.1", 80), true],
    ["[::]/0", tcp("::ffff:127.0.0.1", 80), false],
    ["[::]/0", tcp("127.0.0.1", 80), false],
    ["0.0.0.0/0", tcp("::ffff:1.2.3.4", 80), true],
    ["[::ffff:0:0]/96", tcp("9.9.9.9", 1), true],
    // malformed targets are covered by nothing but "*"
    ["0.0.0.0/0", tcp("1.2.3", 80), false],
    ["[::]/0", tcp("::1::2", 80), false],
    ["*", tcp("1.2.3", 80), true],
    // unix paths
    ["unix:/run/x.sock", upath("/run/x.sock"), true],
    ["unix:/run/x.sock", upath("/run/x.sock2"), false],
    ["unix:/run/**", upath("/run/user/1000/bus"), true],
    ["unix:/run/**", upath("/running"), false],
    ["unix:/run/**", uabs("/run/x"), false],
    ["unix:/run/x.sock", tcp("1.2.3.4", 80), false],
    // abstract
    ["unix:@name", uabs("name"), true],
    ["unix:@name", uabs("name2"), false],
    ["unix:@name", upath("name"), false],
    ["unix:@name", uabs("nam"), false],
    ["unix:@prefix*", uabs("prefix"), true],
    ["unix:@prefix*", uabs("prefix-and-more"), true],
    ["unix:@prefix*", uabs("prefi"), false],
    ["unix:@*", uabs(""), true],
    ["unix:@*", uabs("anything\0with nul"), true],
    ["unix:@/tmp/.X11-unix/*", uabs("/tmp/.X11-unix/X0"), true],
    ["unix:@*", upath("/x"), false],
    ["tcp:*", uabs("x"), false],
  ];
  for (const [rule, target, want] of cases) {
    await t.step(`${rule} ${want ? "covers" : "does not cover"} ${formatTarget(target)}`, () => {
      assert.equal(destCovers(parseConnectDest(rule), target), want);
    });
  }
});

Deno.test("destSpecificity: narrower sets are more specific", async (t) => {
  const order: [string, string][] = [
    // [more specific, less specific]
    ["1.2.3.4", "*"],
    ["tcp:*", "*"],
    ["*:443", "tcp:*"],
    ["tcp:*:443", "*:443"],
    ["1.2.3.4:80", "1.2.3.4"],
    ["tcp:1.2.3.4", "1.2.3.4"],
    ["1.2.3.4:80", "1.2.3.4:80-81"],
    ["1.2.3.4:80-81", "1.2.3.4"],
    ["1.2.3.4", "1.2.3.0/24"],
    ["1.2.3.0/24:25", "1.2.3.4"],
    ["10.0.0.5", "0.0.0.0/0:25"],
    ["0.0.0.0/0", "[::]/1"],
    ["[::1]", "[::]/64"],
    ["unix:/run/x/**", "unix:/run/**"],
    ["unix:/run/x", "unix:/run/x/**"],
    ["unix:@abc", "unix:@abc*"],
    ["unix:@abcd*", "unix:@abc"],
    ["unix:@*", "*"],
  ];
  for (const [hi, lo] of order) {
    await t.step(`${hi} > ${lo}`, () => {
      assert.ok(destSpecificity(parseConnectDest(hi)) > destSpecificity(parseConnectDest(lo)));
    });
  }
  await t.step("IPv4 /N and [::ffff:…]/96+N are equal", () => {
    assert.equal(
      destSpecificity(parseConnectDest("10.0.0.0/8")),
      destSpecificity(parseConnectDest("[::ffff:10.0.0.0]/104")),
    );
  });
});

Deno.test("formatTarget and parseConnectTarget", async (t) => {
  const cases: [ConnectTarget, string][] = [
    [tcp("127.0.0.1", 8080), "tcp:127.0.0.1:8080"],
    [udp("::1", 53), "udp:[::1]:53"],
    [tcp("::ffff:127.0.0.1", 80), "tcp:[::ffff:127.0.0.1]:80"],
    [upath("/run/x.sock"), "unix:/run/x.sock"],
    [uabs("name"), "unix:@name"],
  ];
  for (const [target, text] of cases) {
    await t.step(text, () => assert.equal(formatTarget(target), text));
  }
  const parsed: [string, ConnectTarget][] = [
    ["tcp:127.0.0.1:8080", tcp("127.0.0.1", 8080)],
    ["127.0.0.1:8080", tcp("127.0.0.1", 8080)],
    ["udp:[::1]:53", udp("::1", 53)],
    ["udp:[0:0::1]:53", udp("::1", 53)],
    ["unix:/run/x.sock", upath("/run/x.sock")],
    ["unix:@name", uabs("name")],
  ];
  for (const [text, target] of parsed) {
    await t.step(`parse ${text}`, () => assert.deepEqual(parseConnectTarget(text), target));
  }
  for (const bad of ["1.2.3.4", "1.2.3.0/24:80", "tcp:*:80", "1.2.3.4:80-81", "*", "example.com:80"]) {
    await t.step(`parse rejects ${bad}`, () => assert.throws(() => parseConnectTarget(bad), UsageError));
  }
});

Deno.test("canonicalAddr", async (t) => {
  const cases: ["inet" | "inet6", string, string | null][] = [
    ["inet", "127.0.0.1", "127.0.0.1"],
    ["inet", "127.1", null],
    ["inet6", "0:0:0:0:0:0:0:1", "::1"],
    ["inet6", "2001:DB8::0:1", "2001:db8::1"],
    ["inet6", "::ffff:7f00:1", "::ffff:127.0.0.1"],
    ["inet6", "1::2::3", null],
    ["inet6", "1:0:0:2:0:0:0:3", "1:0:0:2::3"],
    ["inet6", "1:0:0:2:0:0:3:4", "1::2:0:0:3:4"],
    ["inet6", "1:0:2:3:4:5:6:7", "1:0:2:3:4:5:6:7"],
  ];
  for (const [family, addr, want] of cases) {
    await t.step(`${family} ${addr}`, () => assert.equal(canonicalAddr(family, addr), want));
  }
});

Deno.test("suggestDestScopes: narrowest first", async (t) => {
  const cases: [ConnectTarget, string[]][] = [
    [tcp("10.0.0.5", 443), ["tcp:10.0.0.5:443", "tcp:10.0.0.5", "tcp:10.0.0.0/24", "tcp:*:443"]],
    [udp("::1", 53), ["udp:[::1]:53", "udp:[::1]", "udp:[::]/64", "udp:*:53"]],
    [
      tcp("2001:db8:1:2:3:4:5:6", 22),
      ["tcp:[2001:db8:1:2:3:4:5:6]:22", "tcp:[2001:db8:1:2:3:4:5:6]", "tcp:[2001:db8:1:2::]/64", "tcp:*:22"],
    ],
    [tcp("::ffff:127.0.0.1", 80), ["tcp:127.0.0.1:80", "tcp:127.0.0.1", "tcp:127.0.0.0/24", "tcp:*:80"]],
    [udp("1.2.3.4", 0), ["udp:1.2.3.4", "udp:1.2.3.0/24"]],
    [upath("/run/user/1000/bus"), ["unix:/run/user/1000/bus", "unix:/run/user/1000/**"]],
    [upath("/x.sock"), ["unix:/x.sock"]],
    [uabs("/tmp/.X11-unix/X0"), ["unix:@/tmp/.X11-unix/X0", "unix:@/tmp/.X11-unix/*"]],
    [uabs("plain"), ["unix:@plain"]],
    [tcp("1.2.3", 80), []],
  ];
  for (const [target, want] of cases) {
    await t.step(formatTarget(target), () => {
      const got = suggestDestScopes(target);
      assert.deepEqual(got, want);
      // every suggestion parses, covers the target, and they get broader (or no narrower) as they go
      const specs = got.map((s) => parseConnectDest(s));
      for (const d of specs) assert.ok(destCovers(d, target), formatDest(d));
      for (let i = 1; i < specs.length; i++) {
        assert.ok(destSpecificity(specs[i - 1]) > destSpecificity(specs[i]));
      }
    });
  }
});

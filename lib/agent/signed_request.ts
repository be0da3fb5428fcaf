/**
 * How `hallpass answer` proves it holds a token without sending it: each request carries
 * `Authorization: Hallpass-HMAC t=MS, sig=HEX`, an HMAC-SHA256 keyed with the token over the time, the method,
 * the endpoint and a SHA-256 of the body. The person's token goes to many agents (`--agent` repeated); an
 * agent that is hostile (or a pod that took an agent's address) then learns only signatures of requests made
 * to it — it cannot sign an answer of its own choosing for another agent, and the service refuses a signature
 * it has seen, or one more than {@linkcode MAX_SKEW_MS} from its clock. The web page, which talks to one
 * origin only, still sends `Bearer TOKEN`. docs/kubernetes-answering.md ("Tokens").
 *
 * @module
 */

export const SCHEME = "Hallpass-HMAC";
/** How far a request's time may be from the agent's clock. */
export const MAX_SKEW_MS = 5 * 60_000;

const enc = new TextEncoder();

function hex(b: ArrayBuffer): string {
  return [...new Uint8Array(b)].map((x) => x.toString(16).padStart(2, "0")).join("");
}

/** The text signed: what the request does, never where it was sent (a proxy may change the host or prefix). */
export async function signingText(
  t: number,
  method: string,
  endpoint: string,
  body: string,
): Promise<string> {
  const bodyHash = hex(await crypto.subtle.digest("SHA-256", enc.encode(body)));
  return `hallpass-answer-v1\n${t}\n${method.toUpperCase()}\n${endpoint}\n${bodyHash}`;
}

/** An HMAC key made from a token. */
export function hmacKey(token: string): Promise<CryptoKey> {
  return crypto.subtle.importKey("raw", enc.encode(token), { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
  ]);
}

/** The Authorization header value for a request. */
export async function signRequest(
  key: CryptoKey,
  t: number,
  method: string,
  endpoint: string,
  body: string,
): Promise<string> {
  const sig = hex(
    await crypto.subtle.sign("HMAC", key, enc.encode(await signingText(t, method, endpoint, body))),
  );
  return `${SCHEME} t=${t}, sig=${sig}`;
}

/** `t` and `sig` of a Hallpass-HMAC header, or null. */
export function parseSigned(header: string): { t: number; sig: string } | null {
  const m = /^Hallpass-HMAC +t=(\d{1,16}), *sig=([0-9a-f]{64}) *$/.exec(header);
  return m ? { t: Number(m[1]), sig: m[2] } : null;
}

/** Checks signatures against every token (constant time in each comparison) and remembers the ones used. */
export class SignatureCheck {
  readonly #keys: [CryptoKey, string][];
  readonly #seen = new Map<string, number>();

  private constructor(keys: [CryptoKey, string][]) {
    this.#keys = keys;
  }

  static async create(tokens: Map<string, string>): Promise<SignatureCheck> {
    const keys: [CryptoKey, string][] = [];
    for (const [token, name] of tokens) keys.push([await hmacKey(token), name]);
    return new SignatureCheck(keys);
  }

  /** The token's name when the header signs this request, is fresh and was not seen before; else null. */
  async check(
    header: string,
    method: string,
    endpoint: string,
    body: string,
    now = Date.now(),
  ): Promise<string | null> {
    const p = parseSigned(header);
    if (!p || Math.abs(p.t - now) > MAX_SKEW_MS) return null;
    const text = enc.encode(await signingText(p.t, method, endpoint, body));
    let who: string | null = null;
    for (const [key, name] of this.#keys) {
      const want = hex(await crypto.subtle.sign("HMAC", key, text));
      let diff = 0;
      for (let i = 0; i < want.length; i++) diff |= want.charCodeAt(i) ^ p.sig.charCodeAt(i);
      if (diff === 0) who = name;
    }
    if (who === null || this.#seen.has(p.sig)) return null;
    if (this.#seen.size > 1000) {
      for (const [s, until] of this.#seen) if (until < now) this.#seen.delete(s);
    }
    this.#seen.set(p.sig, p.t + 2 * MAX_SKEW_MS);
    return who;
  }
}

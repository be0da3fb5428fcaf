/** lib/agent/signed_request.ts: a signature answers for one request, once, near the agent's time. */
import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { hmacKey, MAX_SKEW_MS, SignatureCheck, signRequest } from "../lib/agent/signed_request.ts";

const T1 = "first-token-0123456789", T2 = "second-token-0123456789";

Deno.test("signed requests: the right token's name, once; another body, method, endpoint, time or key: none", async () => {
  const check = await SignatureCheck.create(new Map([[T1, "alice"], [T2, "bob"]]));
  const now = 1_800_000_000_000;
  const body = '{"id":1,"digest":"d","kind":"once"}';
  const h = await signRequest(await hmacKey(T2), now, "POST", "/api/answer", body);
  assertEquals(await check.check(h, "POST", "/api/answer", body.replace("once", "always"), now), null);
  assertEquals(await check.check(h, "GET", "/api/answer", body, now), null);
  assertEquals(await check.check(h, "POST", "/api/questions", body, now), null);
  assertEquals(await check.check(h, "POST", "/api/answer", body, now + MAX_SKEW_MS + 1), null);
  assertEquals(await check.check(h, "POST", "/api/answer", body, now), "bob");
  assertEquals(await check.check(h, "POST", "/api/answer", body, now), null, "a signature is used once");
  const other = await signRequest(await hmacKey("not-a-token-0123456789"), now, "POST", "/api/answer", body);
  assertEquals(await check.check(other, "POST", "/api/answer", body, now), null);
  assertEquals(await check.check(`Bearer ${T1}`, "POST", "/api/answer", body, now), null);
  assertEquals(await check.check("Hallpass-HMAC t=1, sig=zz", "POST", "/api/answer", body, now), null);
});

// The built web demo's structured modes driven in Chromium (SwiftShader WebGPU) on the embedded
// fortune model: JSON mode (`response_format: json_schema` from the schema box) streams output
// that parses and keeps every constraint of the default schema, checked here key by key; the
// tool-call example returns `message.tool_calls` whose name and arguments fit the function's
// parameters, with finish `tool_calls` (or, for `required`, `length` when fortune keeps adding
// calls until max_tokens, the page saying how many complete ones it kept); a schema box that is not JSON, or a schema the engine
// cannot compile, shows an error (the engine's `InvalidArgument` naming `response_format`)
// instead of hanging. Screenshots land in test/artifacts/.
import { after, before, test } from "node:test";
import assert, { ok } from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { build, preview } from "vite";
import { launchBrowser } from "../support/browser.mjs";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const ARTIFACTS = `${ROOT}test/artifacts/`;
const configFile = `${ROOT}demo/vite.config.ts`;
// Its own build folder: node --test runs test files in parallel, demo.test.mjs builds into another.
const outDir = `${ROOT}dist/demo-structured-test/`;

let server, browser, page;
const pageErrors = [];

before(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  await build({ configFile, build: { outDir, emptyOutDir: true } });
  server = await preview({
    configFile,
    build: { outDir },
    preview: { host: "127.0.0.1", port: 0, strictPort: false },
  });
  browser = await launchBrowser();
  page = await browser.newPage({ viewport: { width: 1000, height: 1200 } });
  page.on("pageerror", (e) => pageErrors.push(e.stack ?? e.message));
  await page.goto(`http://localhost:${server.httpServer.address().port}/`);
  await ready();
}, { timeout: 300_000 });

after(async () => {
  await browser?.close();
  await server?.close();
});

function ready() {
  return page.waitForSelector("body[data-state=ready]", { timeout: 120_000 });
}
const text = (sel) => page.locator(sel).textContent();

/** Fill the prompt and sampling controls, click `button`, and wait for the finish line. */
async function run(button, { prompt, maxTokens, seed }) {
  await page.fill("#prompt", prompt);
  await page.fill("#max-tokens", String(maxTokens));
  await page.fill("#seed", String(seed));
  await page.click(button);
  // "never a hang": every request, refused or not, ends with a finish line within the timeout.
  await page.waitForSelector("#finish[data-finish]", { timeout: 180_000 });
  await ready();
  const error = await page.locator("#error").isVisible() ? await text("#error") : undefined;
  return {
    output: await text("#output"),
    finish: await page.getAttribute("#finish", "data-finish"),
    check: await page.getAttribute("#check", "data-check"),
    error,
  };
}

const isObject = (v) => typeof v === "object" && v !== null && !Array.isArray(v);

/** `value`'s keys are exactly `keys` (all required, additionalProperties false). */
function assertKeys(value, keys, what) {
  ok(isObject(value), `${what}: not an object: ${JSON.stringify(value)}`);
  assert.deepEqual(Object.keys(value).sort(), [...keys].sort(), `${what}: keys`);
}

function assertString(v, { min, max, oneOf }, what) {
  assert.equal(typeof v, "string", `${what}: ${JSON.stringify(v)} is not a string`);
  const n = [...v].length;
  if (min !== undefined) ok(n >= min, `${what}: ${JSON.stringify(v)} is shorter than ${min}`);
  if (max !== undefined) ok(n <= max, `${what}: ${JSON.stringify(v)} is longer than ${max}`);
  if (oneOf) ok(oneOf.includes(v), `${what}: ${JSON.stringify(v)} is not one of ${oneOf}`);
}

test("JSON mode: the output parses and keeps the default schema's types, enum, range and keys", async () => {
  await page.check("#mode input[value=json]");
  ok(await page.locator("#schema").isVisible(), "the schema box shows in JSON mode");
  const schema = JSON.parse(await page.inputValue("#schema"));
  // The constraints checked below are the box's own, read from it.
  assert.equal(schema.additionalProperties, false);
  const { name, age, tags } = schema.properties;
  for (const seed of [7, 21]) {
    const r = await run("#generate", { prompt: "You will", maxTokens: 400, seed });
    assert.equal(r.error, undefined, `seed ${seed}: the request failed`);
    let value;
    try {
      value = JSON.parse(r.output);
    } catch (e) {
      assert.fail(`seed ${seed}: the output is not JSON (${e.message}): ${r.output}`);
    }
    assertKeys(value, schema.required, `seed ${seed}`);
    assertString(value.name, { min: name.minLength, max: name.maxLength }, `seed ${seed} name`);
    ok(Number.isInteger(value.age), `seed ${seed}: age ${JSON.stringify(value.age)}`);
    ok(
      value.age >= age.minimum && value.age <= age.maximum,
      `seed ${seed}: age ${value.age} outside [${age.minimum}, ${age.maximum}]`,
    );
    ok(Array.isArray(tags.items.enum) && Array.isArray(value.tags), `seed ${seed}: tags`);
    ok(value.tags.length <= tags.maxItems, `seed ${seed}: ${value.tags.length} tags`);
    value.tags.forEach((t, i) =>
      assertString(t, { oneOf: tags.items.enum }, `seed ${seed} tags[${i}]`)
    );
    // Pretty-printed on the page; the grammar ended the text (EOS), not max_tokens.
    assert.equal(r.output, JSON.stringify(value, null, 2));
    assert.equal(r.finish, "stop", `seed ${seed}: finish`);
    assert.equal(r.check, "valid", `seed ${seed}: the page's check: ${await text("#check")}`);
  }
  await page.screenshot({ path: `${ARTIFACTS}demo-json-mode.png`, fullPage: true });
  assert.deepEqual(pageErrors, []);
});

test("JSON mode: a schema box that is not JSON, or a schema the engine refuses, shows an error", async () => {
  const original = await page.inputValue("#schema");
  await page.check("#mode input[value=json]");
  await page.fill("#schema", '{"type": "object",');
  let r = await run("#generate", { prompt: "You will", maxTokens: 50, seed: 1 });
  assert.equal(r.finish, "error");
  assert.match(r.error ?? "", /the schema box is not JSON/);
  // JSON, but not a schema: `integr` is no JSON Schema type. The engine refuses it by name.
  const bad = JSON.parse(original);
  bad.properties.age.type = "integr";
  await page.fill("#schema", JSON.stringify(bad, null, 2));
  r = await run("#generate", { prompt: "You will", maxTokens: 50, seed: 1 });
  assert.equal(r.finish, "error");
  ok(r.error !== undefined, "an error is shown");
  assert.match(r.error, /InvalidArgument/);
  assert.match(r.error, /response_format/);
  assert.match(r.error, /integr/, "the message names what is wrong in the schema");
  await page.screenshot({ path: `${ARTIFACTS}demo-json-bad-schema.png`, fullPage: true });
  await page.fill("#schema", original);
  await page.check("#mode input[value=text]");
  assert.deepEqual(pageErrors, []);
});

/** The example's functions' parameters, as the page offers them (checked against the calls). */
const PARAMETERS = {
  get_weather: (args, what) => {
    assertKeys(args, ["city", "unit"], what);
    assertString(args.city, { min: 1, max: 32 }, `${what} city`);
    assertString(args.unit, { oneOf: ["celsius", "fahrenheit"] }, `${what} unit`);
  },
  get_time: (args, what) => {
    assertKeys(args, ["timezone"], what);
    assertString(args.timezone, { min: 1, max: 32 }, `${what} timezone`);
  },
};

test("the tool-call example returns calls whose name and arguments fit the function", async () => {
  for (const [choice, seed] of [["get_weather", 3], ["required", 5]]) {
    await page.selectOption("#tool-choice", choice);
    const r = await run("#tool-example", { prompt: "", maxTokens: 300, seed });
    assert.equal(r.error, undefined, `${choice}: the request failed`);
    const calls = JSON.parse(r.output);
    ok(Array.isArray(calls) && calls.length >= 1, `${choice}: calls ${r.output}`);
    if (choice !== "required") assert.equal(calls.length, 1, `${choice}: one named call`);
    for (const [i, call] of calls.entries()) {
      const what = `${choice}: call ${i}`;
      assertKeys(call, ["name", "arguments"], what);
      if (choice !== "required") assert.equal(call.name, choice, what);
      ok(call.name in PARAMETERS, `${what}: no function ${call.name}`);
      PARAMETERS[call.name](call.arguments, `${what} arguments`);
    }
    const note = await text("#check");
    if (choice === "required" && r.finish === "length") {
      // fortune may go on calling (the grammar lets a list grow) until max_tokens cuts it: the
      // calls complete before the cut are the reply's, and the page says so.
      assert.match(note, /cut at max_tokens; \d+ complete call\(s\) kept/);
    } else assert.equal(r.finish, "tool_calls", `${choice}: finish_reason`);
    assert.equal(r.check, "valid", `${choice}: the page's check: ${note}`);
  }
  await page.screenshot({ path: `${ARTIFACTS}demo-tool-call.png`, fullPage: true });
  assert.deepEqual(pageErrors, []);
});

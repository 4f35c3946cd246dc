/**
 * Builds `test/fixtures/schemas/corpus.json`, the JSON Schema corpus structured output is checked
 * against (issue 37): every schema of the JSON Schema Test Suite's draft 2020-12 tests (keyword by
 * keyword, with the suite's valid and invalid instances), and a deterministic sample of real-world
 * schemas from JSONSchemaBench's collections (function-call parameters, Kubernetes objects,
 * SchemaStore files, Snowplow events), each at most `MAX_BYTES` of JSON.
 *
 * `deno run -A scripts/schema_corpus.ts SUITE_GIT_DIR BENCH_GIT_DIR` where each is a clone (or a
 * bare mirror) of https://github.com/json-schema-org/JSON-Schema-Test-Suite and
 * https://github.com/guidance-ai/jsonschemabench; the commits read are recorded in the output.
 * Schemas that name a remote document (the suite's `http://localhost:1234/...` refs) are left out:
 * the corpus is self-contained.
 */

import { runCli } from "../src/adapters/deno/flags.ts";

const OUT = new URL("../test/fixtures/schemas/corpus.json", import.meta.url);
/** The largest real-world schema taken (bytes of its JSON). */
const MAX_BYTES = 8000;
/** Real-world schemas taken per collection of JSONSchemaBench. */
const SAMPLE: Record<string, number> = {
  Glaiveai2K: 70,
  Kubernetes: 45,
  JsonSchemaStore: 45,
  Snowplow: 45,
};

interface Entry {
  /** A stable id: `suite/<file>#<group>` or `bench/<collection>/<file>`. */
  id: string;
  schema: unknown;
  /** The suite's instances: whether each is valid under the schema. */
  tests?: { data: unknown; valid: boolean }[];
}

const { args } = runCli({
  name: "schema_corpus",
  command: "deno run -A scripts/schema_corpus.ts",
  about: "Builds test/fixtures/schemas/corpus.json from the JSON Schema Test Suite and " +
    "JSONSchemaBench (clones or bare mirrors).",
  flags: {},
  args: {
    usage: "SUITE_GIT_DIR BENCH_GIT_DIR",
    min: 2,
    max: 2,
    help: "the JSON-Schema-Test-Suite and jsonschemabench repositories",
  },
});
const [suiteDir, benchDir] = args as [string, string];

async function git(dir: string, ...args: string[]): Promise<string> {
  const out = await new Deno.Command("git", { args: ["--git-dir", gitDir(dir), ...args] }).output();
  if (!out.success) {
    throw new Error(`git ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  }
  return new TextDecoder().decode(out.stdout);
}

/** A work tree's `.git`, or the directory itself when it is a bare repository. */
function gitDir(dir: string): string {
  try {
    Deno.statSync(`${dir}/.git`);
    return `${dir}/.git`;
  } catch {
    return dir;
  }
}

const files = async (dir: string, under: string) =>
  (await git(dir, "ls-tree", "-r", "--name-only", "HEAD", under)).split("\n").filter((f) =>
    f.endsWith(".json")
  ).sort();

/** Whether `schema` names a document outside itself. */
function remote(schema: unknown): boolean {
  return JSON.stringify(schema).includes('"http://localhost:1234');
}

async function suite(dir: string): Promise<Entry[]> {
  const out: Entry[] = [];
  for (const path of await files(dir, "tests/draft2020-12")) {
    const groups = JSON.parse(await git(dir, "show", `HEAD:${path}`)) as {
      description: string;
      schema: unknown;
      tests: { data: unknown; valid: boolean }[];
    }[];
    const name = path.replace("tests/draft2020-12/", "").replace(/\.json$/, "");
    groups.forEach((g, i) => {
      if (remote(g.schema)) return;
      out.push({
        id: `suite/${name}#${i}`,
        schema: g.schema,
        tests: g.tests.map((t) => ({ data: t.data, valid: t.valid })),
      });
    });
  }
  return out;
}

async function bench(dir: string): Promise<Entry[]> {
  const out: Entry[] = [];
  for (const [collection, n] of Object.entries(SAMPLE)) {
    const small: [string, unknown][] = [];
    for (const path of await files(dir, `data/${collection}`)) {
      // A mirror may list its largest files without holding them; those are too large anyway.
      const text = await git(dir, "show", `HEAD:${path}`).catch(() => undefined);
      if (text === undefined) continue;
      const schema = JSON.parse(text);
      if (JSON.stringify(schema).length <= MAX_BYTES && !remote(schema)) small.push([path, schema]);
    }
    // Every k-th of the small ones, in name order: the same sample from the same commit.
    const step = Math.max(1, Math.floor(small.length / n));
    for (let i = 0, taken = 0; i < small.length && taken < n; i += step, taken++) {
      const [path, schema] = small[i]!;
      out.push({ id: `bench/${collection}/${path.split("/").pop()}`, schema });
    }
  }
  return out;
}

const entries = [...await suite(suiteDir), ...await bench(benchDir)];
// The same schema twice is checked once.
const seen = new Set<string>();
const unique = entries.filter((e) => {
  const key = JSON.stringify(e.schema);
  if (seen.has(key)) return false;
  seen.add(key);
  return true;
});
const corpus = {
  made_by: "deno run -A scripts/schema_corpus.ts SUITE_GIT_DIR BENCH_GIT_DIR",
  sources: [
    {
      name: "suite",
      repo: "https://github.com/json-schema-org/JSON-Schema-Test-Suite",
      commit: (await git(suiteDir, "rev-parse", "HEAD")).trim(),
      license: "MIT (Copyright (c) 2012 Julian Berman)",
      taken: "every schema of tests/draft2020-12 (optional/ included) without a remote $ref",
    },
    {
      name: "bench",
      repo: "https://github.com/guidance-ai/jsonschemabench",
      commit: (await git(benchDir, "rev-parse", "HEAD")).trim(),
      license: "as published by each upstream collection (JSONSchemaBench, arXiv:2501.10868)",
      taken: `every k-th schema of at most ${MAX_BYTES} bytes in name order: ${
        Object.entries(SAMPLE).map(([c, n]) => `${n} of ${c}`).join(", ")
      }`,
    },
  ],
  schemas: unique,
};
await Deno.mkdir(new URL(".", OUT), { recursive: true });
await Deno.writeTextFile(OUT, JSON.stringify(corpus, null, 1) + "\n");
console.log(
  `${unique.length} schemas (${
    entries.length - unique.length
  } duplicates dropped) -> ${OUT.pathname}`,
);
